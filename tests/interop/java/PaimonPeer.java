/*
 * The Java interop peer: Apache Paimon's Java core (0.9), driven by the tests through a long-lived
 * subprocess (tests/interop/java_peer.py). One JSON request per line on stdin, one JSON response
 * per line on stdout; data moves as Arrow IPC stream files.
 *
 * A request is {"ops": [op, ...]}; the response is {"results": [{"ok": true, ...} | {"ok": false,
 * "error_type", "message", "trace"}, ...]}, one result per op, stopping after the first failure.
 *
 * Ops (every op names "warehouse" and "identifier"; "options" are dynamic table options):
 *   create_table  fields (Paimon schema JSON fields), primary_keys, partition_keys, options
 *   alter_table   changes: [{kind: add_column|rename_column|drop_column|update_column_type, ...}]
 *   write         data (Arrow IPC stream file), kinds (["+I", "-D", ...] or null), commit_user?, options?
 *   stream_write  commit_user, commits, key_base, rows_per_commit, updates_per_commit, sleep_ms, options? :
 *                 one long-lived write-only streaming writer and committer, commits 1..commits
 *                 (see streamWrite for the rows); returns the snapshot id each commit got
 *   compact       full (bool), options?
 *   read          out (Arrow IPC stream file), snapshot_id?, tag?, options? ; rows carry _row_kind
 *   stream        out, options (scan.mode, scan.snapshot-id, ...) ; every plan until the table's end
 *   create_tag / delete_tag / rollback / create_branch / fast_forward / expire_snapshots
 *   snapshots     the ids, commit kinds, schema ids and commit identities of the table's snapshots
 *
 * Only the tests use this program; it is compiled by `make java-peer` against the jar that the
 * Makefile takes from pypaimon 0.2.0's source distribution and PySpark's Hadoop client jars.
 */

import java.io.BufferedReader;
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowStreamReader;
import org.apache.arrow.vector.ipc.ArrowStreamWriter;
import org.apache.paimon.Snapshot;
import org.apache.paimon.arrow.reader.ArrowBatchReader;
import org.apache.paimon.arrow.vector.ArrowFormatWriter;
import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.CatalogContext;
import org.apache.paimon.catalog.CatalogFactory;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.data.BinaryRow;
import org.apache.paimon.data.BinaryString;
import org.apache.paimon.data.GenericRow;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.data.JoinedRow;
import org.apache.paimon.disk.IOManager;
import org.apache.paimon.options.Options;
import org.apache.paimon.schema.Schema;
import org.apache.paimon.schema.SchemaChange;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.sink.CommitMessage;
import org.apache.paimon.table.sink.StreamTableCommit;
import org.apache.paimon.table.sink.StreamWriteBuilder;
import org.apache.paimon.table.sink.TableWriteImpl;
import org.apache.paimon.predicate.PredicateBuilder;
import org.apache.paimon.table.source.DataSplit;
import org.apache.paimon.table.source.ReadBuilder;
import org.apache.paimon.table.source.Split;
import org.apache.paimon.table.source.StreamTableScan;
import org.apache.paimon.table.source.TableScan;
import org.apache.paimon.types.DataField;
import org.apache.paimon.types.DataTypeJsonParser;
import org.apache.paimon.types.DataTypeRoot;
import org.apache.paimon.types.DataTypes;
import org.apache.paimon.types.RowKind;
import org.apache.paimon.types.RowType;
import org.apache.paimon.utils.SnapshotManager;
import org.apache.paimon.reader.RecordReader;

public final class PaimonPeer {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String KIND_COLUMN = "_row_kind";
    private static final int BATCH_ROWS = 4096;

    private static Path tempRoot;

    public static void main(String[] args) throws Exception {
        // The protocol owns stdout; everything a library prints goes to stderr.
        PrintStream protocol = new PrintStream(new FileOutputStream(java.io.FileDescriptor.out), true, "UTF-8");
        System.setOut(System.err);
        tempRoot = Files.createTempDirectory("paimon-peer-");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            JsonNode request = JSON.readTree(line);
            ArrayNode results = JSON.createArrayNode();
            for (JsonNode op : request.get("ops")) {
                ObjectNode result = JSON.createObjectNode();
                try {
                    run(op, result);
                    result.put("ok", true);
                    results.add(result);
                } catch (Throwable e) {
                    StringWriter trace = new StringWriter();
                    e.printStackTrace(new PrintWriter(trace));
                    result.put("ok", false);
                    result.put("error_type", e.getClass().getName());
                    result.put("message", String.valueOf(e.getMessage()));
                    result.put("trace", trace.toString());
                    results.add(result);
                    break;
                }
            }
            ObjectNode response = JSON.createObjectNode();
            response.set("results", results);
            protocol.println(JSON.writeValueAsString(response));
            protocol.flush();
        }
    }

    private static void run(JsonNode op, ObjectNode result) throws Exception {
        String kind = op.get("op").asText();
        try (Catalog catalog = catalog(op.get("warehouse").asText())) {
            Identifier id = Identifier.fromString(op.get("identifier").asText());
            switch (kind) {
                case "create_table":
                    createTable(catalog, id, op);
                    return;
                case "alter_table":
                    alterTable(catalog, id, op);
                    return;
                default:
                    break;
            }
            FileStoreTable table = (FileStoreTable) catalog.getTable(id);
            if (op.hasNonNull("options")) {
                table = table.copy(stringMap(op.get("options")));
            }
            switch (kind) {
                case "write":
                    write(table, op, result);
                    break;
                case "stream_write":
                    streamWrite(table, op, result);
                    break;
                case "compact":
                    compact(table, op, result);
                    break;
                case "read":
                    read(table, op, result);
                    break;
                case "stream":
                    stream(table, op, result);
                    break;
                case "create_tag":
                    if (op.hasNonNull("snapshot_id")) {
                        table.createTag(op.get("tag").asText(), op.get("snapshot_id").asLong());
                    } else {
                        table.createTag(op.get("tag").asText());
                    }
                    break;
                case "delete_tag":
                    table.deleteTag(op.get("tag").asText());
                    break;
                case "rollback":
                    if (op.hasNonNull("tag")) {
                        table.rollbackTo(op.get("tag").asText());
                    } else {
                        table.rollbackTo(op.get("snapshot_id").asLong());
                    }
                    break;
                case "create_branch":
                    if (op.hasNonNull("tag")) {
                        table.createBranch(op.get("branch").asText(), op.get("tag").asText());
                    } else {
                        table.createBranch(op.get("branch").asText());
                    }
                    break;
                case "fast_forward":
                    table.fastForward(op.get("branch").asText());
                    break;
                case "expire_snapshots":
                    result.put("expired", table.newExpireSnapshots()
                            .config(org.apache.paimon.options.ExpireConfig.builder()
                                    .snapshotRetainMin(op.get("retain_min").asInt())
                                    .snapshotRetainMax(op.get("retain_max").asInt())
                                    .snapshotTimeRetain(java.time.Duration.ofMillis(0))
                                    .build())
                            .expire());
                    break;
                case "snapshots":
                    snapshots(table, result);
                    break;
                case "analyze":
                    analyze(table, result);
                    break;
                default:
                    throw new IllegalArgumentException("unknown op " + kind);
            }
        }
    }

    private static Catalog catalog(String warehouse) {
        Options options = new Options();
        options.set("warehouse", warehouse);
        return CatalogFactory.createCatalog(CatalogContext.create(options));
    }

    private static Map<String, String> stringMap(JsonNode node) {
        Map<String, String> out = new LinkedHashMap<>();
        if (node != null && !node.isNull()) {
            node.fields().forEachRemaining(e -> out.put(e.getKey(), e.getValue().asText()));
        }
        return out;
    }

    private static List<String> strings(JsonNode node) {
        List<String> out = new ArrayList<>();
        if (node != null && !node.isNull()) {
            node.forEach(n -> out.add(n.asText()));
        }
        return out;
    }

    // -- tables ------------------------------------------------------------------------------

    private static void createTable(Catalog catalog, Identifier id, JsonNode op) throws Exception {
        catalog.createDatabase(id.getDatabaseName(), true);
        Schema.Builder schema = Schema.newBuilder();
        for (JsonNode f : op.get("fields")) {
            DataField field = DataTypeJsonParser.parseDataField(f);
            schema.column(field.name(), field.type(), field.description());
        }
        schema.primaryKey(strings(op.get("primary_keys")));
        schema.partitionKeys(strings(op.get("partition_keys")));
        schema.options(stringMap(op.get("table_options")));
        catalog.createTable(id, schema.build(), false);
    }

    private static void alterTable(Catalog catalog, Identifier id, JsonNode op) throws Exception {
        List<SchemaChange> changes = new ArrayList<>();
        for (JsonNode c : op.get("changes")) {
            String name = c.get("name").asText();
            switch (c.get("kind").asText()) {
                case "add_column":
                    changes.add(SchemaChange.addColumn(name, DataTypeJsonParser.parseDataType(c.get("type"))));
                    break;
                case "rename_column":
                    changes.add(SchemaChange.renameColumn(name, c.get("new_name").asText()));
                    break;
                case "drop_column":
                    changes.add(SchemaChange.dropColumn(name));
                    break;
                case "update_column_type":
                    changes.add(SchemaChange.updateColumnType(name, DataTypeJsonParser.parseDataType(c.get("type"))));
                    break;
                case "set_option":
                    changes.add(SchemaChange.setOption(name, c.get("value").asText()));
                    break;
                default:
                    throw new IllegalArgumentException("unknown schema change " + c);
            }
        }
        catalog.alterTable(id, changes, false);
    }

    private static void snapshots(FileStoreTable table, ObjectNode result) throws Exception {
        ArrayNode out = result.putArray("snapshots");
        Iterator<Snapshot> it = table.snapshotManager().snapshots();
        while (it.hasNext()) {
            Snapshot s = it.next();
            ObjectNode n = out.addObject();
            n.put("id", s.id());
            n.put("kind", s.commitKind().name());
            n.put("schema_id", s.schemaId());
            n.put("commit_user", s.commitUser());
            n.put("commit_identifier", s.commitIdentifier());
        }
    }

    /**
     * Table statistics for the latest snapshot, committed as Spark's {@code ANALYZE TABLE}
     * commits them ({@code FileStoreCommit.commitStatistics}): a new ANALYZE snapshot naming a
     * file in {@code statistics/}. Only the merged record count and size, no column statistics.
     * Result: {@code snapshot_id} (the ANALYZE snapshot) and {@code statistics} (its file name).
     */
    private static void analyze(FileStoreTable table, ObjectNode result) throws Exception {
        Snapshot latest = table.snapshotManager().latestSnapshot();
        long records = latest.totalRecordCount() == null ? 0L : latest.totalRecordCount();
        org.apache.paimon.stats.Statistics stats =
                new org.apache.paimon.stats.Statistics(latest.id(), latest.schemaId(), records, records * 32L);
        try (org.apache.paimon.operation.FileStoreCommit commit =
                table.store().newCommit("paimon-peer-analyze")) {
            commit.commitStatistics(stats, Long.MAX_VALUE);
        }
        Snapshot analyzed = table.snapshotManager().latestSnapshot();
        result.put("snapshot_id", analyzed.id());
        result.put("statistics", analyzed.statistics());
    }

    // -- writing -----------------------------------------------------------------------------

    private static long nextIdentifier = 1;

    private static StreamWriteBuilder writeBuilder(FileStoreTable table, JsonNode op) {
        StreamWriteBuilder builder = table.newStreamWriteBuilder();
        if (op.hasNonNull("commit_user")) {
            builder = builder.withCommitUser(op.get("commit_user").asText());
        }
        return builder;
    }

    private static void commit(StreamWriteBuilder builder, TableWriteImpl<?> write) throws Exception {
        long identifier = nextIdentifier++;
        List<CommitMessage> messages = write.prepareCommit(true, identifier);
        try (StreamTableCommit commit = builder.newCommit()) {
            commit.commit(identifier, messages);
        }
    }

    private static void write(FileStoreTable table, JsonNode op, ObjectNode result) throws Exception {
        StreamWriteBuilder builder = writeBuilder(table, op);
        List<RowKind> kinds = new ArrayList<>();
        if (op.hasNonNull("kinds")) {
            op.get("kinds").forEach(k -> kinds.add(RowKind.fromShortString(k.asText())));
        }
        RowType rowType = table.rowType();
        long rows = 0;
        // Dynamic-bucket tables take the bucket from an assigner, as Flink's and Spark's writers do.
        org.apache.paimon.index.HashBucketAssigner assigner = null;
        org.apache.paimon.table.sink.RowPartitionKeyExtractor keys = null;
        if (table.bucketMode() == org.apache.paimon.table.BucketMode.HASH_DYNAMIC) {
            assigner = new org.apache.paimon.index.HashBucketAssigner(table.snapshotManager(), "paimon-peer",
                    table.store().newIndexFileHandler(), 1, 1, 0, table.coreOptions().dynamicBucketTargetRowNum());
            keys = new org.apache.paimon.table.sink.RowPartitionKeyExtractor(table.schema());
        }
        try (IOManager io = IOManager.create(tempRoot.toString());
             TableWriteImpl<?> write = (TableWriteImpl<?>) builder.newWrite()) {
            write.withIOManager(io);
            try (BufferAllocator allocator = new RootAllocator();
                 FileInputStream file = new FileInputStream(op.get("data").asText());
                 ArrowStreamReader reader = new ArrowStreamReader(file, allocator)) {
                ArrowBatchReader convert = new ArrowBatchReader(rowType);
                while (reader.loadNextBatch()) {
                    for (InternalRow row : convert.readBatch(reader.getVectorSchemaRoot())) {
                        if (!kinds.isEmpty()) {
                            row.setRowKind(kinds.get((int) rows));
                        }
                        if (assigner != null) {
                            write.write(row, assigner.assign(keys.partition(row), keys.trimmedPrimaryKey(row).hashCode()));
                        } else {
                            write.write(row);
                        }
                        rows++;
                    }
                }
            }
            commit(builder, write);
        }
        result.put("rows", rows);
        result.put("snapshot_id", table.snapshotManager().latestSnapshotId());
    }

    /**
     * A streaming writer as a Flink sink runs it: ONE {@code StreamTableWrite} and ONE
     * {@code StreamTableCommit} for the whole op, committing {@code commits} times with commit
     * identifiers 1..commits under {@code commit_user}. The table is copied with
     * {@code write-only=true}, so this writer never compacts and its committer never expires
     * snapshots, partitions or tags: the other engine owns maintenance.
     *
     * <p>The table's columns must be (BIGINT key, BIGINT commit, STRING note). Commit i writes,
     * in this order, its new keys {@code key_base + (i-1)*rows_per_commit + j} (j below
     * rows_per_commit) and then, for i > 1, updates of {@code updates_per_commit} earlier keys
     * {@code key_base + (i*7 + u*13) mod ((i-1)*rows_per_commit)} (u below updates_per_commit),
     * each row as (key, i, "k{key}@c{i}"); the tests build their model from the same rule
     * (tests/interop/test_java_writer_race.py). {@code sleep_ms} pauses after each commit.
     *
     * <p>Result: {@code commit_user}, {@code snapshot_ids} (entry i-1: the snapshot holding
     * commit i, found right after it by walking back from the latest snapshot; -1 when not found)
     * and {@code elapsed_ms}.
     */
    private static void streamWrite(FileStoreTable table, JsonNode op, ObjectNode result) throws Exception {
        List<DataField> fields = table.rowType().getFields();
        if (fields.size() != 3
                || fields.get(0).type().getTypeRoot() != DataTypeRoot.BIGINT
                || fields.get(1).type().getTypeRoot() != DataTypeRoot.BIGINT
                || fields.get(2).type().getTypeRoot() != DataTypeRoot.VARCHAR) {
            throw new IllegalArgumentException("stream_write needs columns (BIGINT, BIGINT, STRING), not " + fields);
        }
        String user = op.get("commit_user").asText();
        long commits = op.get("commits").asLong();
        long base = op.get("key_base").asLong();
        long perCommit = op.get("rows_per_commit").asLong();
        long updates = op.path("updates_per_commit").asLong(0);
        long sleepMs = op.path("sleep_ms").asLong(0);
        if (commits < 1 || perCommit < 1 || updates < 0 || sleepMs < 0) {
            throw new IllegalArgumentException("stream_write needs commits >= 1, rows_per_commit >= 1, "
                    + "updates_per_commit >= 0 and sleep_ms >= 0");
        }
        FileStoreTable writeOnly = table.copy(Map.of("write-only", "true"));
        SnapshotManager snapshots = writeOnly.snapshotManager();
        StreamWriteBuilder builder = writeOnly.newStreamWriteBuilder().withCommitUser(user);
        ArrayNode ids = result.putArray("snapshot_ids");
        long started = System.nanoTime();
        try (IOManager io = IOManager.create(tempRoot.toString());
             TableWriteImpl<?> write = (TableWriteImpl<?>) builder.newWrite();
             StreamTableCommit commit = builder.newCommit()) {
            write.withIOManager(io);
            for (long i = 1; i <= commits; i++) {
                for (long j = 0; j < perCommit; j++) {
                    write.write(streamRow(base + (i - 1) * perCommit + j, i));
                }
                for (long u = 0; i > 1 && u < updates; u++) {
                    write.write(streamRow(base + Math.floorMod(i * 7 + u * 13, (i - 1) * perCommit), i));
                }
                commit.commit(i, write.prepareCommit(false, i));
                ids.add(findCommit(snapshots, user, i));
                if (sleepMs > 0) {
                    Thread.sleep(sleepMs);
                }
            }
        }
        result.put("commit_user", user);
        result.put("elapsed_ms", (System.nanoTime() - started) / 1_000_000);
    }

    private static GenericRow streamRow(long key, long commit) {
        return GenericRow.of(key, commit, BinaryString.fromString("k" + key + "@c" + commit));
    }

    /**
     * The id of the snapshot holding {@code (user, identifier)}, walking back from the latest
     * snapshot; -1 if an older commit of the user, a missing snapshot or the start comes first.
     */
    private static long findCommit(SnapshotManager snapshots, String user, long identifier) {
        Long latest = snapshots.latestSnapshotId();
        for (long id = latest == null ? 0 : latest; id > 0; id--) {
            Snapshot snapshot;
            try {
                snapshot = snapshots.snapshot(id);
            } catch (RuntimeException e) {
                return -1; // expired meanwhile: the commit is older than anything retained
            }
            if (user.equals(snapshot.commitUser())) {
                if (snapshot.commitIdentifier() == identifier) {
                    return id;
                }
                if (snapshot.commitIdentifier() < identifier) {
                    return -1;
                }
            }
        }
        return -1;
    }

    private static void compact(FileStoreTable table, JsonNode op, ObjectNode result) throws Exception {
        boolean full = op.path("full").asBoolean(true);
        Set<Map.Entry<BinaryRow, Integer>> buckets = new LinkedHashSet<>();
        for (Split split : table.newReadBuilder().newScan().plan().splits()) {
            DataSplit data = (DataSplit) split;
            buckets.add(Map.entry(data.partition(), data.bucket()));
        }
        StreamWriteBuilder builder = writeBuilder(table, op);
        try (IOManager io = IOManager.create(tempRoot.toString());
             TableWriteImpl<?> write = (TableWriteImpl<?>) builder.newWrite()) {
            write.withIOManager(io);
            for (Map.Entry<BinaryRow, Integer> b : buckets) {
                write.compact(b.getKey(), b.getValue(), full);
            }
            commit(builder, write);
        }
        result.put("buckets", buckets.size());
    }

    // -- reading -----------------------------------------------------------------------------

    private static void read(FileStoreTable table, JsonNode op, ObjectNode result) throws Exception {
        Map<String, String> travel = new HashMap<>();
        if (op.hasNonNull("snapshot_id")) {
            travel.put("scan.snapshot-id", op.get("snapshot_id").asText());
        }
        if (op.hasNonNull("tag")) {
            travel.put("scan.tag-name", op.get("tag").asText());
        }
        if (!travel.isEmpty()) {
            table = table.copy(travel);
        }
        ReadBuilder builder = table.newReadBuilder();
        if (op.hasNonNull("equal")) {
            // column = value: Java skips files (statistics, file indexes), not rows of kept files
            JsonNode equal = op.get("equal");
            int field = table.rowType().getFieldNames().indexOf(equal.get("column").asText());
            JsonNode value = equal.get("value");
            Object literal = value.isTextual() ? BinaryString.fromString(value.asText()) : (Object) value.asLong();
            builder = builder.withFilter(new PredicateBuilder(table.rowType()).equal(field, literal));
        }
        List<Split> splits = builder.newScan().plan().splits();
        int planned = 0;
        for (Split split : splits) {
            planned += ((DataSplit) split).dataFiles().size();
        }
        result.put("files", planned);
        try (RowsOut out = new RowsOut(builder.readType(), op.get("out").asText());
             IOManager io = IOManager.create(tempRoot.toString())) {
            out.add(builder.newRead().withIOManager(io).createReader(splits));
            result.put("rows", out.rows);
        }
    }

    /** Every plan of a stream scan, from its configured start to the table's latest snapshot. */
    private static void stream(FileStoreTable table, JsonNode op, ObjectNode result) throws Exception {
        ReadBuilder builder = table.newReadBuilder();
        StreamTableScan scan = builder.newStreamScan();
        long latest = table.snapshotManager().latestSnapshotId() == null
                ? 0 : table.snapshotManager().latestSnapshotId();
        ArrayNode plans = result.putArray("plans");
        try (RowsOut out = new RowsOut(builder.readType(), op.get("out").asText());
             IOManager io = IOManager.create(tempRoot.toString())) {
            for (int i = 0; i < 10_000; i++) {
                TableScan.Plan plan = scan.plan();
                Long next = scan.checkpoint();
                long before = out.rows;
                if (!plan.splits().isEmpty()) {
                    out.add(builder.newRead().withIOManager(io).createReader(plan.splits()));
                }
                plans.add(out.rows - before);
                if (plan.splits().isEmpty() && (next == null || next > latest)) {
                    break;
                }
            }
            result.put("rows", out.rows);
        }
    }

    /** Rows (with their row kind as a last TINYINT column) into an Arrow IPC stream file. */
    private static final class RowsOut implements AutoCloseable {
        private final ArrowFormatWriter writer;
        private final ArrowStreamWriter stream;
        private final FileOutputStream file;
        private final GenericRow kind = new GenericRow(1);
        private final JoinedRow joined = new JoinedRow();
        long rows;

        RowsOut(RowType type, String path) throws Exception {
            List<DataField> fields = new ArrayList<>(type.getFields());
            fields.add(new DataField(Integer.MAX_VALUE - 1, KIND_COLUMN, DataTypes.TINYINT()));
            writer = new ArrowFormatWriter(new RowType(fields), BATCH_ROWS, true);
            file = new FileOutputStream(path);
            stream = new ArrowStreamWriter(writer.getVectorSchemaRoot(), null, file);
            stream.start();
        }

        void add(RecordReader<InternalRow> reader) throws Exception {
            try (RecordReader<InternalRow> r = reader) {
                r.forEachRemaining(row -> {
                    kind.setField(0, row.getRowKind().toByteValue());
                    joined.replace(row, kind);
                    if (!writer.write(joined)) {
                        flush();
                        if (!writer.write(joined)) {
                            throw new IllegalStateException("a row does not fit an empty Arrow batch");
                        }
                    }
                    rows++;
                });
            }
        }

        private void flush() {
            writer.flush();
            VectorSchemaRoot root = writer.getVectorSchemaRoot();
            try {
                stream.writeBatch();
            } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
            for (FieldVector v : root.getFieldVectors()) {
                v.reset();
            }
        }

        @Override
        public void close() throws Exception {
            if (!writer.empty()) {
                flush();
            }
            stream.end();
            stream.close();
            file.close();
            writer.close();
        }
    }
}
