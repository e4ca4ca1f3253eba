package kraftlake.oracle;

import org.apache.kafka.common.record.internal.FileRecords;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.common.utils.internals.BufferSupplier;
import org.apache.kafka.common.utils.internals.LogContext;
import org.apache.kafka.image.MetadataImage;
import org.apache.kafka.image.loader.MetadataBatchLoader;
import org.apache.kafka.metadata.MetadataRecordSerde;
import org.apache.kafka.metadata.SupportedConfigChecker;
import org.apache.kafka.raft.Batch;
import org.apache.kafka.raft.LeaderAndEpoch;
import org.apache.kafka.raft.internals.RecordsIterator;
import org.apache.kafka.server.common.ApiMessageAndVersion;
import org.apache.kafka.server.fault.FaultHandler;

import java.io.File;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.ArrayList;
import java.util.List;

/**
 * Kafka's own loader timed on a metadata log from offset 0, for the benchmarks that give kraftlake's replay
 * as a ratio to Kafka's (bench/bench_kafka.py).
 *
 * <p>Usage: {@code KafkaReplayBench SEGMENT.log REPEAT [TO_OFFSET]}. Without TO_OFFSET the segment's batches
 * are decoded once and kept, then loaded REPEAT + 2 times (two warm-ups) by a fresh MetadataBatchLoader with
 * one commit at the end, as kraftlake's {@code replay} does; it prints one line per timed run:
 * {@code replay CPU_SECONDS} (decode excluded) and {@code decode+replay CPU_SECONDS} (batches read from the
 * file each time). With TO_OFFSET it loads the log up to that offset once, as a cold process answering "the
 * image at offset N" would, and prints the image's partition count. CPU time of this thread, so the figures
 * compare with kraftlake's single-threaded process time.
 */
public final class KafkaReplayBench {
    private static final int MAX_BATCH_BYTES = 8 * 1024 * 1024;
    private static final int WARMUPS = 2;
    private static final LogContext LOG_CONTEXT = new LogContext("[replay-bench] ");
    private static final FaultHandler FAIL = (message, cause) -> {
        throw new IllegalStateException(message + ": " + cause, cause);
    };
    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

    private KafkaReplayBench() {
    }

    public static void main(String[] args) throws IOException {
        if (args.length < 2) {
            System.err.println("usage: KafkaReplayBench SEGMENT.log REPEAT [TO_OFFSET]");
            System.exit(2);
        }
        File segment = new File(args[0]);
        if (args.length > 2) {
            long to = Long.parseLong(args[2]);
            MetadataImage image = load(read(segment, to));
            System.out.println("partitions " + partitionCount(image) + " offset "
                + image.provenance().lastContainedOffset());
            return;
        }
        int repeat = Integer.parseInt(args[1]);
        List<Batch<ApiMessageAndVersion>> batches = read(segment, Long.MAX_VALUE);
        long records = batches.stream().mapToLong(b -> b.records().size()).sum();
        System.out.println("records " + records + " batches " + batches.size());
        for (int run = 0; run < repeat + WARMUPS; run++) {
            long start = THREADS.getCurrentThreadCpuTime();
            MetadataImage image = load(batches);
            long replayed = THREADS.getCurrentThreadCpuTime();
            load(read(segment, Long.MAX_VALUE));
            long both = THREADS.getCurrentThreadCpuTime();
            if (run >= WARMUPS) {
                System.out.println("replay " + (replayed - start) / 1e9);
                System.out.println("decode+replay " + (both - replayed) / 1e9);
                System.out.println("partitions " + partitionCount(image));
            }
        }
    }

    /** The batches of the segment whose first offset is at most `to`, the last one cut after `to`. */
    private static List<Batch<ApiMessageAndVersion>> read(File segment, long to) throws IOException {
        List<Batch<ApiMessageAndVersion>> batches = new ArrayList<>();
        try (FileRecords records = FileRecords.open(segment, false, true, 0, false);
             RecordsIterator<ApiMessageAndVersion> iterator = new RecordsIterator<>(records,
                 MetadataRecordSerde.INSTANCE, BufferSupplier.create(), MAX_BATCH_BYTES, true, LOG_CONTEXT)) {
            while (iterator.hasNext()) {
                Batch<ApiMessageAndVersion> batch = iterator.next();
                if (batch.baseOffset() > to) {
                    break;
                }
                batches.add(batch.lastOffset() <= to || batch.records().isEmpty() ? batch : Batch.data(
                    batch.baseOffset(), batch.epoch(), batch.appendTimestamp(), batch.sizeInBytes(),
                    batch.records().subList(0, (int) (to - batch.baseOffset() + 1))));
            }
        }
        return batches;
    }

    /** Kafka's MetadataBatchLoader over every batch, one commit at the end (what it publishes last). */
    private static MetadataImage load(List<Batch<ApiMessageAndVersion>> batches) {
        MetadataImage[] published = {MetadataImage.EMPTY};
        MetadataBatchLoader loader = new MetadataBatchLoader(LOG_CONTEXT, Time.SYSTEM, FAIL,
            (delta, image, manifest) -> published[0] = image, SupportedConfigChecker.TRUE);
        loader.resetToImage(MetadataImage.EMPTY);
        for (Batch<ApiMessageAndVersion> batch : batches) {
            loader.loadBatch(batch, LeaderAndEpoch.UNKNOWN);
        }
        loader.maybeFlushBatches(LeaderAndEpoch.UNKNOWN, true);
        return published[0];
    }

    private static int partitionCount(MetadataImage image) {
        return image.topics().topicsById().values().stream().mapToInt(t -> t.partitions().size()).sum();
    }
}
