package kraftlake.oracle;

import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.config.types.Password;
import org.apache.kafka.coordinator.group.GroupConfig;
import org.apache.kafka.server.config.AbstractKafkaConfig;
import org.apache.kafka.server.config.DynamicConfig;
import org.apache.kafka.server.config.ServerTopicConfigSynonyms;
import org.apache.kafka.storage.internals.log.LogConfig;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.TreeMap;

/**
 * The config definitions Kafka decides a value's secrecy by, and Kafka's own decision for given names.
 *
 * <p>{@code KafkaConfigTypes} prints {@code SCOPE<TAB>NAME<TAB>TYPE} for every config Kafka defines, sorted:
 * scope {@code broker} is the broker's ConfigDef ({@code AbstractKafkaConfig.CONFIG_DEF}), {@code broker_dynamic}
 * the dynamic broker configs ({@code DynamicConfig.Broker}), {@code topic} LogConfig's, {@code group} GroupConfig's.
 * kraftlake keeps that output as {@code kraftlake/records/kafka_config_types.tsv}.
 *
 * <p>{@code KafkaConfigTypes --loggable} reads {@code RESOURCE_TYPE_ID<TAB>NAME} lines and prints, for each,
 * {@code hidden} or {@code shown}: what Kafka's {@code AbstractKafkaConfig.loggableValue} makes of that config's
 * value (a PASSWORD, or a config Kafka does not know, is hidden). The tests compare kraftlake's rule with it.
 *
 * <p>{@code KafkaConfigTypes --defaults} prints {@code SCOPE<TAB>NAME<TAB>DEFAULT<TAB>BROKER_SYNONYM} for every
 * broker ({@code AbstractKafkaConfig.CONFIG_DEF}) and topic ({@code LogConfig}) config, sorted: the default as
 * {@code ConfigDef.convertToString} writes it ({@code \N} when there is none, a PASSWORD's {@code [redacted]}),
 * with backslash, tab and newline escaped; a topic config's broker synonym, the cluster default it falls back
 * to ({@code ServerTopicConfigSynonyms}, empty when none). kraftlake keeps it as
 * {@code kraftlake/records/kafka_config_defaults.tsv}.
 */
public final class KafkaConfigTypes {
    private KafkaConfigTypes() {
    }

    public static void main(String[] args) throws IOException {
        if (args.length == 1 && args[0].equals("--loggable")) {
            loggable();
        } else if (args.length == 1 && args[0].equals("--defaults")) {
            defaults();
        } else if (args.length == 0) {
            Map<String, Map<String, ConfigDef.ConfigKey>> scopes = new TreeMap<>();
            scopes.put("broker", AbstractKafkaConfig.CONFIG_DEF.configKeys());
            scopes.put("broker_dynamic", DynamicConfig.Broker.configKeys());
            scopes.put("topic", LogConfig.configKeys());
            scopes.put("group", GroupConfig.CONFIG_DEF.configKeys());
            StringBuilder out = new StringBuilder();
            scopes.forEach((scope, keys) -> new TreeMap<>(keys).forEach((name, key) ->
                out.append(scope).append('\t').append(name).append('\t').append(key.type.name()).append('\n')));
            System.out.print(out);
        } else {
            System.err.println("usage: KafkaConfigTypes [--loggable | --defaults]");
            System.exit(2);
        }
    }

    private static void loggable() throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        StringBuilder out = new StringBuilder();
        for (String line = in.readLine(); line != null; line = in.readLine()) {
            String[] parts = line.split("\t", 2);
            ConfigResource.Type type = ConfigResource.Type.forId(Byte.parseByte(parts[0]));
            String value = AbstractKafkaConfig.loggableValue(type, parts[1], "value");
            out.append(Password.HIDDEN.equals(value) ? "hidden" : "shown").append('\n');
        }
        System.out.print(out);
    }

    private static void defaults() {
        Map<String, Map<String, ConfigDef.ConfigKey>> scopes = new TreeMap<>();
        scopes.put("broker", AbstractKafkaConfig.CONFIG_DEF.configKeys());
        scopes.put("topic", LogConfig.configKeys());
        StringBuilder out = new StringBuilder();
        scopes.forEach((scope, keys) -> new TreeMap<>(keys).forEach((name, key) -> {
            String shown;
            if (key.defaultValue == null || key.defaultValue == ConfigDef.NO_DEFAULT_VALUE) {
                shown = "\\N";
            } else if (key.type == ConfigDef.Type.PASSWORD) {
                shown = "[redacted]";
            } else {
                shown = escaped(ConfigDef.convertToString(key.defaultValue, key.type));
            }
            String synonym = scope.equals("topic")
                ? ServerTopicConfigSynonyms.TOPIC_CONFIG_SYNONYMS.getOrDefault(name, "") : "";
            out.append(scope).append('\t').append(name).append('\t').append(shown).append('\t').append(synonym)
                .append('\n');
        }));
        System.out.print(out);
    }

    private static String escaped(String value) {
        return value.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n");
    }
}
