package kraftlake.oracle;

import org.apache.kafka.common.DirectoryId;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.common.security.auth.SecurityProtocol;
import org.apache.kafka.metadata.LeaderRecoveryState;

/**
 * Kafka's names for the codes its metadata records carry: prints {@code ENUM<TAB>CODE<TAB>NAME} for every value of
 * the enums kraftlake's explorer names (and {@code DirectoryId<TAB>BASE64<TAB>NAME} for the reserved directory ids),
 * which tests/records/test_kafka_names.py compares with {@code kraftlake/records/kafka_names.py}.
 */
public final class KafkaNames {
    private KafkaNames() {
    }

    private static void print(String kind, Object code, Object name) {
        System.out.println(kind + "\t" + code + "\t" + name);
    }

    public static void main(String[] args) {
        for (ResourceType v : ResourceType.values()) print("ResourceType", v.code(), v);
        for (PatternType v : PatternType.values()) print("PatternType", v.code(), v);
        for (AclOperation v : AclOperation.values()) print("AclOperation", v.code(), v);
        for (AclPermissionType v : AclPermissionType.values()) print("AclPermissionType", v.code(), v);
        for (SecurityProtocol v : SecurityProtocol.values()) print("SecurityProtocol", v.id, v.name);
        for (LeaderRecoveryState v : LeaderRecoveryState.values()) print("LeaderRecoveryState", v.value(), v);
        print("DirectoryId", DirectoryId.MIGRATING, "MIGRATING");
        print("DirectoryId", DirectoryId.UNASSIGNED, "UNASSIGNED");
        print("DirectoryId", DirectoryId.LOST, "LOST");
    }
}
