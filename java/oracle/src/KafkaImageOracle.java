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
import java.util.TreeSet;
import java.util.stream.Stream;

/**
 * Kafka's own MetadataImage at chosen offsets of a KRaft metadata log directory, each written as a snapshot
 * file by Kafka's own snapshot writer: the oracle kraftlake's replay is compared with.
 *
 * <p>Usage: {@code KafkaImageOracle LOG_DIR OUT_DIR (--changes | --offsets FILE | OFFSET...)}. For every
 * offset served it writes {@code OUT_DIR/<offset+1>-<epoch>.checkpoint} (Kafka's snapshot naming, so the
 * snapshot id is the image's end offset) and prints {@code OFFSET<TAB>FILE}. {@code --changes} serves every
 * offset whose record changes the image (metadata or the Raft voter state).
 *
 * <p>Records are read with Kafka's RecordsIterator / RecordsSnapshotReader and MetadataRecordSerde, and
 * applied by Kafka's own MetadataBatchLoader (transactions included) with one commit per Raft batch, as a
 * broker catching up sees them. The image at an offset inside a batch is the loader's result for the batch
 * cut after that offset. KRaftVersion and KRaftVoters control records (Kafka's Raft state, which the
 * MetadataLoader ignores) go into each snapshot's header batch, as Kafka's snapshot writer puts them.
 */
public final class KafkaImageOracle {
    private static final int MAX_BATCH_BYTES = 8 * 1024 * 1024;
    private static final int RECORDS_PER_SNAPSHOT_BATCH = 1000;
    private static final LogContext LOG_CONTEXT = new LogContext("[oracle] ");
    private static final FaultHandler FAIL = (message, cause) -> {
        throw new IllegalStateException(message + ": " + cause, cause);
    };

    private final Path outDir;
    private final TreeSet<Long> wanted;  // null: every offset whose record changes the image
    private final MetadataBatchLoader walker;
    private MetadataImage walkerImage = MetadataImage.EMPTY;
    private boolean walkerPublished;
    /** The image at the last batch boundary outside any transaction, and the batches loaded since. */
    private MetadataImage boundary = MetadataImage.EMPTY;
    private final List<Batch<ApiMessageAndVersion>> sinceBoundary = new ArrayList<>();
    private MetadataImage previous = MetadataImage.EMPTY;
    private KRaftVersion kraftVersion = KRaftVersion.KRAFT_VERSION_0;
    private Optional<VoterSet> voters = Optional.empty();
    private long firstOffset = -1;
    private long nextOffset = -1;
    private int written;

    private KafkaImageOracle(Path outDir, TreeSet<Long> wanted) {
        this.outDir = outDir;
        this.wanted = wanted;
        this.walker = new MetadataBatchLoader(LOG_CONTEXT, Time.SYSTEM, FAIL, (delta, image, manifest) -> {
            walkerImage = image;
            walkerPublished = true;
        }, SupportedConfigChecker.TRUE);
    }

    public static void main(String[] args) {
        try {
            if (args.length < 3) {
                throw new IllegalArgumentException(
                    "usage: KafkaImageOracle LOG_DIR OUT_DIR (--changes | --offsets FILE | OFFSET...)");
            }
            Path logDir = Path.of(args[0]);
            Path outDir = Path.of(args[1]);
            Files.createDirectories(outDir);
            KafkaImageOracle oracle = new KafkaImageOracle(outDir, wantedOffsets(args));
            oracle.run(logDir);
        } catch (Exception e) {
            System.err.println("kafka oracle: " + (e.getMessage() == null ? e.toString() : e.getMessage()));
            System.exit(2);
        }
    }

    private static TreeSet<Long> wantedOffsets(String[] args) throws IOException {
        if (args[2].equals("--changes")) {
            return null;
        }
        List<String> words = args[2].equals("--offsets")
            ? List.of(Files.readString(Path.of(args[3])).trim().split("\\s+"))
            : List.of(args).subList(2, args.length);
        TreeSet<Long> offsets = new TreeSet<>();
        for (String word : words) {
            if (!word.isEmpty()) {
                offsets.add(Long.parseLong(word));
            }
        }
        return offsets;
    }

    private void run(Path logDir) throws IOException {
        List<Path> segments = files(logDir, ".log");
        long logStart = segments.isEmpty() ? -1 : Long.parseLong(name(segments.get(0)).replace(".log", ""));
        Optional<SnapshotPath> start = startingSnapshot(logDir, logStart);
        if (start.isEmpty() && logStart != 0) {
            throw new IllegalStateException(logDir + ": no log from offset 0 and no snapshot to start from");
        }
        if (start.isPresent()) {
            loadSnapshot(logDir, start.get().snapshotId());
        }
        for (Path segment : segments) {
            loadSegment(segment);
        }
        if (wanted != null && !wanted.isEmpty()) {
            throw new IllegalStateException(logDir + " holds images at offsets " + firstOffset + ".." + (nextOffset - 1)
                + ": none at offsets " + wanted);
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

    /** Kafka's MetadataLoader.loadSnapshot: replay every record, finishSnapshot, apply. */
    private void loadSnapshot(Path logDir, OffsetAndEpoch id) {
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
            walkerImage = boundary = image;
            firstOffset = id.offset() - 1;
            nextOffset = id.offset();
            serve(id.offset() - 1, id.epoch(), image, true);
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
        for (long offset = batch.baseOffset(); offset <= batch.lastOffset(); offset++) {
            boolean raftChanged = false;
            if (!batch.controlRecords().isEmpty()) {
                raftChanged = applyRaftRecord(batch.controlRecords().get((int) (offset - batch.baseOffset())));
            }
            if (wanted == null || wanted.contains(offset)) {
                serve(offset, batch.epoch(), imageAt(batch, offset), raftChanged);
            }
        }
        walkerPublished = false;
        walker.loadBatch(batch, LeaderAndEpoch.UNKNOWN);
        walker.maybeFlushBatches(LeaderAndEpoch.UNKNOWN, true);
        if (walkerPublished && walkerImage.provenance().lastContainedOffset() == batch.lastOffset()) {
            boundary = walkerImage;
            sinceBoundary.clear();
        } else {
            sinceBoundary.add(batch);
        }
        nextOffset = batch.lastOffset() + 1;
    }

    /** Kafka's image after `offset`: the batches since the boundary and this one cut after `offset`, loaded
     * as one commit by a fresh MetadataBatchLoader; what it publishes last is the image (an open transaction
     * publishes nothing, so the image stays the one before it). */
    private MetadataImage imageAt(Batch<ApiMessageAndVersion> batch, long offset) {
        MetadataImage[] published = {boundary};
        MetadataBatchLoader loader = new MetadataBatchLoader(LOG_CONTEXT, Time.SYSTEM, FAIL,
            (delta, image, manifest) -> published[0] = image, SupportedConfigChecker.TRUE);
        loader.resetToImage(boundary);
        for (Batch<ApiMessageAndVersion> earlier : sinceBoundary) {
            loader.loadBatch(earlier, LeaderAndEpoch.UNKNOWN);
        }
        loader.loadBatch(cut(batch, offset), LeaderAndEpoch.UNKNOWN);
        loader.maybeFlushBatches(LeaderAndEpoch.UNKNOWN, offset == batch.lastOffset());
        return published[0];
    }

    private static Batch<ApiMessageAndVersion> cut(Batch<ApiMessageAndVersion> batch, long offset) {
        if (batch.records().isEmpty() || offset == batch.lastOffset()) {
            return batch;
        }
        List<ApiMessageAndVersion> kept = batch.records().subList(0, (int) (offset - batch.baseOffset() + 1));
        return Batch.data(batch.baseOffset(), batch.epoch(), batch.appendTimestamp(), batch.sizeInBytes(), kept);
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

    /** Writes the image at `offset` when it was asked for, or (in --changes mode) when it changed. */
    private void serve(long offset, int epoch, MetadataImage image, boolean raftChanged) {
        boolean changed = raftChanged || !sameState(image, previous);
        previous = image;
        if (wanted == null ? !changed : !wanted.remove(offset)) {
            return;
        }
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
        System.out.println(offset + "\t" + Snapshots.filenameFromSnapshotId(id) + Snapshots.SUFFIX);
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
