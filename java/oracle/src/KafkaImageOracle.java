package kraftlake.oracle;

import org.apache.kafka.common.message.KRaftVersionRecord;
import org.apache.kafka.common.message.VotersRecord;
import org.apache.kafka.common.record.internal.FileRecords;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.common.utils.internals.BufferSupplier;
import org.apache.kafka.common.utils.internals.LogContext;
import org.apache.kafka.image.MetadataDelta;
import org.apache.kafka.image.MetadataImage;
import org.apache.kafka.image.MetadataProvenance;
import org.apache.kafka.image.loader.MetadataBatchLoader;
import org.apache.kafka.image.writer.ImageWriterOptions;
import org.apache.kafka.image.writer.RaftSnapshotWriter;
import org.apache.kafka.metadata.MetadataRecordSerde;
import org.apache.kafka.metadata.SupportedConfigChecker;
import org.apache.kafka.raft.Batch;
import org.apache.kafka.raft.ControlRecord;
import org.apache.kafka.raft.LeaderAndEpoch;
import org.apache.kafka.raft.VoterSet;
import org.apache.kafka.raft.internals.RecordsIterator;
import org.apache.kafka.server.common.ApiMessageAndVersion;
import org.apache.kafka.server.common.KRaftVersion;
import org.apache.kafka.server.common.OffsetAndEpoch;
import org.apache.kafka.server.fault.FaultHandler;
import org.apache.kafka.snapshot.FileRawSnapshotReader;
import org.apache.kafka.snapshot.FileRawSnapshotWriter;
import org.apache.kafka.snapshot.RecordsSnapshotReader;
import org.apache.kafka.snapshot.RecordsSnapshotWriter;
import org.apache.kafka.snapshot.SnapshotPath;
import org.apache.kafka.snapshot.Snapshots;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * Every image Kafka's own loader publishes for a KRaft metadata log directory, each written once (when its
 * state differs from the one before) as a snapshot file by Kafka's own snapshot writer: the oracle
 * kraftlake's replay is compared with at every offset.
 *
 * <p>Usage: {@code KafkaImageOracle LOG_DIR OUT_DIR --published [--bootstrap]}. It serves every image Kafka's loader
 * publishes (one commit per Raft batch) and every change of the Raft voter state, in log order, printing
 * {@code FROM<TAB>PROVENANCE<TAB>FILE}: FROM is the offset from which the image is in force (a publish inside
 * a batch: its provenance offset; at the end of a batch: the batch's last offset; a Raft record: its own
 * offset), FILE ({@code OUT_DIR/<FROM+1>-<epoch>.checkpoint}) is {@code -} when the state (metadata and Raft)
 * is the previous line's. The image at any offset N is the last line with FROM &lt;= N; none before the
 * first publish. With {@code --bootstrap}, a log from offset 0 is read after the directory's bootstrap checkpoint
 * ({@code 00000000000000000000-0000000000.checkpoint}, written by {@code kafka-storage format --standalone} or
 * {@code --initial-controllers}), as the node's own loader reads it: its Raft client hands the loader that
 * snapshot before any high watermark is known, so MetadataLoader holds it ({@code stillNeedToCatchUp}) and the
 * batch loader, reset to it ({@code hasSeenRecord = !image.isEmpty()}), publishes it with the end of the
 * log's first batch.
 *
 * <p>Records are read with Kafka's RecordsIterator / RecordsSnapshotReader and MetadataRecordSerde, and
 * applied by Kafka's own MetadataBatchLoader (transactions included) with one commit per Raft batch, as a
 * broker following the leader sees them. KRaftVersion and KRaftVoters control records (Kafka's Raft state, which the
 * MetadataLoader ignores) go into each snapshot's header batch, as Kafka's snapshot writer puts them.
 */
public final class KafkaImageOracle {
    private static final String USAGE = "usage: KafkaImageOracle LOG_DIR OUT_DIR --published [--bootstrap]";
    private static final OffsetAndEpoch BOOTSTRAP = new OffsetAndEpoch(0, 0);
    private static final int MAX_BATCH_BYTES = 8 * 1024 * 1024;
    private static final int RECORDS_PER_SNAPSHOT_BATCH = 1000;
    private static final LogContext LOG_CONTEXT = new LogContext("[oracle] ");
    private static final FaultHandler FAIL = (message, cause) -> {
        throw new IllegalStateException(message + ": " + cause, cause);
    };

    private final Path outDir;
    private final List<MetadataImage> walkerPublishes = new ArrayList<>();
    private boolean anyPublished;
    private MetadataBatchLoader walker;  // not final: its own callback asks it whether it has seen a record
    private MetadataImage walkerImage = MetadataImage.EMPTY;
    private MetadataImage previous = MetadataImage.EMPTY;
    private KRaftVersion kraftVersion = KRaftVersion.KRAFT_VERSION_0;
    private Optional<VoterSet> voters = Optional.empty();
    private long firstOffset = -1;
    private long nextOffset = -1;
    private int written;

    private KafkaImageOracle(Path outDir) {
        this.outDir = outDir;
        // MetadataLoader publishes nothing while its batch loader has seen no metadata record (stillNeedToCatchUp
        // asks hasSeenRecord() in the update callback, before the loader resets to the new image)
        this.walker = new MetadataBatchLoader(LOG_CONTEXT, Time.SYSTEM, FAIL, (delta, image, manifest) -> {
            walkerImage = image;
            if (this.walker.hasSeenRecord()) {
                walkerPublishes.add(image);
            }
        }, SupportedConfigChecker.TRUE);
    }

    public static void main(String[] args) {
        try {
            boolean bootstrap = args.length == 4 && args[3].equals("--bootstrap");
            if (args.length != 3 && !bootstrap) {
                throw new IllegalArgumentException(USAGE);
            }
            Path logDir = Path.of(args[0]);
            Path outDir = Path.of(args[1]);
            Files.createDirectories(outDir);
            if (!args[2].equals("--published")) {
                throw new IllegalArgumentException(USAGE);
            }
            KafkaImageOracle oracle = new KafkaImageOracle(outDir);
            oracle.run(logDir, bootstrap);
        } catch (Exception e) {
            System.err.println("kafka oracle: " + (e.getMessage() == null ? e.toString() : e.getMessage()));
            System.exit(2);
        }
    }

    private void run(Path logDir, boolean bootstrap) throws IOException {
        List<Path> segments = files(logDir, ".log");
        long logStart = segments.isEmpty() ? -1 : Long.parseLong(name(segments.get(0)).replace(".log", ""));
        Optional<SnapshotPath> start = startingSnapshot(logDir, logStart);
        if (start.isEmpty() && logStart != 0) {
            throw new IllegalStateException(logDir + ": no log from offset 0 and no snapshot to start from");
        }
        if (start.isPresent()) {
            loadSnapshot(logDir, start.get().snapshotId(), true);
        } else if (bootstrap) {
            if (!Files.exists(logDir.resolve(Snapshots.filenameFromSnapshotId(BOOTSTRAP) + Snapshots.SUFFIX))) {
                throw new IllegalStateException(logDir + ": --bootstrap, and no bootstrap checkpoint");
            }
            loadSnapshot(logDir, BOOTSTRAP, false);
        }
        for (Path segment : segments) {
            loadSegment(segment);
        }
        System.err.println("kafka oracle: wrote " + written + " snapshots to " + outDir);
    }

    private static List<Path> files(Path dir, String suffix) throws IOException {
        try (Stream<Path> listing = Files.list(dir)) {
            return listing.filter(p -> name(p).endsWith(suffix)).sorted().toList();
        }
    }

    private static String name(Path path) {
        return path.getFileName().toString();
    }

    /** As kraftlake's history: the log alone when it starts at 0, else the earliest snapshot it continues
     * from (the latest snapshot when there is no log). */
    private static Optional<SnapshotPath> startingSnapshot(Path logDir, long logStart) throws IOException {
        if (logStart == 0) {
            return Optional.empty();
        }
        List<SnapshotPath> usable = new ArrayList<>();
        for (Path file : files(logDir, Snapshots.SUFFIX)) {
            Snapshots.parse(file)
                .filter(s -> !s.partial() && !s.deleted() && s.snapshotId().offset() >= logStart)
                .ifPresent(usable::add);
        }
        if (usable.isEmpty()) {
            return Optional.empty();
        }
        return Optional.of(logStart < 0 ? usable.get(usable.size() - 1) : usable.get(0));
    }

    /** Kafka's MetadataLoader.loadSnapshot: replay every record, finishSnapshot, apply; published (emitted)
     * or, a bootstrap checkpoint, held as the image the log's first batch is loaded on. */
    private void loadSnapshot(Path logDir, OffsetAndEpoch id, boolean publish) {
        MetadataDelta delta = new MetadataDelta.Builder().setImage(MetadataImage.EMPTY).build();
        try (RecordsSnapshotReader<ApiMessageAndVersion> reader = RecordsSnapshotReader.of(
                FileRawSnapshotReader.open(logDir, id), MetadataRecordSerde.INSTANCE, BufferSupplier.create(),
                MAX_BATCH_BYTES, true, LOG_CONTEXT)) {
            while (reader.hasNext()) {
                Batch<ApiMessageAndVersion> batch = reader.next();
                batch.controlRecords().forEach(this::applyRaftRecord);
                batch.records().forEach(record -> delta.replay(record.message()));
            }
            delta.finishSnapshot();
            MetadataImage image = delta.apply(new MetadataProvenance(reader.lastContainedLogOffset(),
                reader.lastContainedLogEpoch(), reader.lastContainedLogTimestamp(), true));
            walker.resetToImage(image);
            walkerImage = image;
            nextOffset = id.offset();
            if (publish) {
                firstOffset = id.offset() - 1;
                anyPublished = true;
                emit(id.offset() - 1, id.offset() - 1, id.epoch(), image, true);
            }
        } catch (RuntimeException e) {
            Path file = logDir.resolve(Snapshots.filenameFromSnapshotId(id) + Snapshots.SUFFIX);
            throw new IllegalStateException(file + ": " + e.getMessage(), e);
        }
    }

    private void loadSegment(Path segment) throws IOException {
        try (FileRecords records = FileRecords.open(segment.toFile(), false, true, 0, false);
             RecordsIterator<ApiMessageAndVersion> batches = new RecordsIterator<>(records,
                 MetadataRecordSerde.INSTANCE, BufferSupplier.create(), MAX_BATCH_BYTES, true, LOG_CONTEXT)) {
            while (batches.hasNext()) {
                Batch<ApiMessageAndVersion> batch = batches.next();
                if (batch.lastOffset() < nextOffset) {
                    continue;  // covered by the snapshot the replay started from
                }
                if (nextOffset >= 0 && batch.baseOffset() != nextOffset) {
                    throw new IllegalStateException(segment + ": batch at offset " + batch.baseOffset()
                        + " where offset " + nextOffset + " comes next");
                }
                loadBatch(batch);
            }
        } catch (RuntimeException e) {
            String where = nextOffset < 0 ? " in its first batch: " : " after offset " + (nextOffset - 1) + ": ";
            throw new IllegalStateException(segment + where + e.getMessage(), e);
        }
    }

    private void loadBatch(Batch<ApiMessageAndVersion> batch) {
        if (firstOffset < 0) {
            firstOffset = batch.baseOffset();
        }
        loadPublished(batch);
        nextOffset = batch.lastOffset() + 1;
    }

    /** --published: one commit per batch; each publish and each Raft state change emitted once. */
    private void loadPublished(Batch<ApiMessageAndVersion> batch) {
        for (int i = 0; i < batch.controlRecords().size(); i++) {
            if (applyRaftRecord(batch.controlRecords().get(i)) && anyPublished) {
                emit(batch.baseOffset() + i, walkerImage.provenance().lastContainedOffset(), batch.epoch(), walkerImage,
                    true);
            }
        }
        walkerPublishes.clear();
        walker.loadBatch(batch, LeaderAndEpoch.UNKNOWN);
        int inBatch = walkerPublishes.size();
        walker.maybeFlushBatches(LeaderAndEpoch.UNKNOWN, true);
        for (int i = 0; i < walkerPublishes.size(); i++) {
            MetadataImage image = walkerPublishes.get(i);
            long provenance = image.provenance().lastContainedOffset();
            anyPublished = true;
            emit(i < inBatch ? provenance : batch.lastOffset(), provenance, batch.epoch(), image, false);
        }
    }

    private void emit(long from, long provenance, int epoch, MetadataImage image, boolean raftChanged) {
        boolean changed = raftChanged || !sameState(image, previous) || written == 0;
        previous = image;
        String file = "-";
        if (changed) {
            file = writeSnapshot(from, epoch, image);
        }
        System.out.println(from + "\t" + provenance + "\t" + file);
    }

    /** Kafka's Raft state (KIP-853): returns whether the record changed it. */
    private boolean applyRaftRecord(ControlRecord record) {
        switch (record.type()) {
            case KRAFT_VERSION:
                kraftVersion = KRaftVersion.fromFeatureLevel(((KRaftVersionRecord) record.message()).kRaftVersion());
                return true;
            case KRAFT_VOTERS:
                voters = Optional.of(VoterSet.fromVotersRecord((VotersRecord) record.message()));
                return true;
            default:
                return false;
        }
    }

    /** Kafka's image (and the Raft state now) as a snapshot file named for `offset`; returns its name. */
    private String writeSnapshot(long offset, int epoch, MetadataImage image) {
        OffsetAndEpoch id = new OffsetAndEpoch(offset + 1, epoch);
        RecordsSnapshotWriter.Builder builder = new RecordsSnapshotWriter.Builder()
            .setLastContainedLogTimestamp(image.provenance().lastContainedLogTimeMs())
            .setMaxBatchSizeBytes(MAX_BATCH_BYTES)
            .setKraftVersion(kraftVersion)
            .setVoterSet(kraftVersion.isReconfigSupported() ? voters : Optional.empty())
            .setRawSnapshotWriter(FileRawSnapshotWriter.create(outDir, id));
        RaftSnapshotWriter writer = new RaftSnapshotWriter(builder.build(MetadataRecordSerde.INSTANCE),
            RECORDS_PER_SNAPSHOT_BATCH);
        if (!image.isEmpty()) {  // an empty image has no metadata.version to write at
            // ELR written wherever the record version can carry it, also where Kafka's own snapshots leave it
            // out (the eligible.leader.replicas feature off), so none of the image is lost on the way.
            boolean elr = image.features().metadataVersionOrThrow().isElrSupported();
            image.write(writer, new ImageWriterOptions.Builder(image).setEligibleLeaderReplicasEnabled(elr).build());
        }
        writer.close(true);
        written++;
        return Snapshots.filenameFromSnapshotId(id) + Snapshots.SUFFIX;
    }

    /** Equal images but for their provenance. */
    private static boolean sameState(MetadataImage a, MetadataImage b) {
        return a.features().equals(b.features()) && a.cluster().equals(b.cluster())
            && a.topics().equals(b.topics()) && a.configs().equals(b.configs())
            && a.clientQuotas().equals(b.clientQuotas()) && a.producerIds().equals(b.producerIds())
            && a.acls().equals(b.acls()) && a.scram().equals(b.scram())
            && a.delegationTokens().equals(b.delegationTokens());
    }
}
