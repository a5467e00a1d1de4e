package io.mcctl.cli.command;

import io.mcctl.cli.CliException;
import io.mcctl.cli.ExitCodes;
import io.mcctl.cli.OutputMixin;
import io.mcctl.cli.SettingsOptions;
import io.mcctl.cli.Table;
import io.mcctl.cli.stats.TierStatsReport;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.client.MasterException;
import io.mcctl.master.proto.v1.BucketFileState;
import io.mcctl.master.proto.v1.BucketStats;
import io.mcctl.master.proto.v1.GetStatsResponse;
import io.mcctl.master.proto.v1.GetLayoutResponse;
import io.mcctl.storage.config.DurationParser;
import io.mcctl.storage.config.EffectiveConfig;
import io.mcctl.storage.config.Setting;
import io.mcctl.storage.config.StorageSettings;
import io.mcctl.storage.io.BucketIoSelector;
import io.mcctl.storage.layout.BucketLayout;
import io.mcctl.storage.layout.LayoutFile;
import io.mcctl.storage.config.SizeParser;
import io.mcctl.storage.mount.CheckResult;
import io.mcctl.storage.mount.ExpectedLayout;
import io.mcctl.storage.mount.MountValidator;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code mcctl mount validate}: is this node's mount of the root fit to join the tier? */
@Command(name = "validate", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Check that this node's mount of the root is fit to join the tier: the root, its filesystem (3FS or not), "
                + "stat latency, capacity, the layout record, the bucket files, the open-file limit, and a write + fsync + "
                + "read-back probe in a scratch file (never a bucket file).",
                "The io check says which bucket-file IO this node would use (posix or usrbio, from the io setting) and why; io usrbio "
                        + "that cannot be used here FAILs naming what is missing (the library, a function of it, a 3FS mount, a ring).",
                "The layout checked is the root's layout record (mooncake.layout.json) where it has one; --bucket-count, --page-size and "
                        + "--bucket-size (or their environment or file settings) override it, with a note on stderr when they disagree.",
                "With --master, also the master's own view of the bucket files: a bucket whose file it found missing or replaced "
                        + "takes no allocations (master-buckets, a WARN naming them).",
                "Exit 0 when no check FAILs, 1 when one does, 2 on bad input, 4 when --master cannot be reached."})
public final class MountValidateCommand implements Callable<Integer>, SettingsOptions.UsesSettings {

    @Spec
    CommandSpec spec;

    @Mixin
    OutputMixin output;

    @Option(names = "--master", paramLabel = "HOST:PORT",
            description = "Also compare with this master's layout: cluster id, root path, sizes (default: no master).")
    String master;

    @Option(names = "--timeout", paramLabel = "DURATION", defaultValue = "5s",
            description = "How long any one check (and the master call) may take before it counts as hung (default: ${DEFAULT-VALUE}).")
    String timeout;

    @Override
    public List<Setting<?>> settings() {
        return StorageSettings.ALL;
    }

    @Override
    public Integer call() {
        Duration limit = parseTimeout();
        if (master != null) {
            try {
                MasterClient.checkTarget(master);
            } catch (IllegalArgumentException e) {
                throw new CliException(ExitCodes.USAGE, e.getMessage());
            }
        }
        EffectiveConfig config = SettingsOptions.resolve(spec, settings());
        List<String> overrides = new ArrayList<>();
        BucketLayout layout = withLayoutRecord(config, StorageSettings.layout(config), overrides);
        PrintWriter err = spec.commandLine().getErr();
        for (String override : overrides) {
            err.println("mcctl: note: " + override);
        }
        err.flush();
        String fsType = config.get(StorageSettings.FS_TYPE);
        Optional<ExpectedLayout> expected = Optional.empty();
        CheckResult masterBuckets = null;
        if (master != null) {
            try (MasterClient client = new MasterClient(master, limit)) {
                GetLayoutResponse response = client.layout();
                expected = Optional.of(new ExpectedLayout(response.getRootDir(), response.getBucketCount(), response.getPageSize(),
                        response.getBucketSize(), response.getClusterId(), response.getFsType()));
                masterBuckets = masterBuckets(client);
            }
        }
        List<CheckResult> results = new ArrayList<>(MountValidator.validate(layout, fsType, expected, limit));
        CheckResult ioCheck = results.get(0).status() == CheckResult.Status.FAIL
                ? CheckResult.skip(MountValidator.IO, "the root is not usable")
                : MountValidator.ioCheck(BucketIoSelector.Wanted.of(config), fsType, layout.root());
        results.add(ioCheck);
        if (masterBuckets != null) {
            results.add(masterBuckets);
        }
        boolean fit = MountValidator.fit(results);
        Map<CheckResult.Status, Integer> counts = new EnumMap<>(CheckResult.Status.class);
        for (CheckResult.Status status : CheckResult.Status.values()) {
            counts.put(status, 0);
        }
        results.forEach(r -> counts.merge(r.status(), 1, Integer::sum));
        PrintWriter out = spec.commandLine().getOut();
        if (output.json()) {
            List<Map<String, Object>> checks = new ArrayList<>();
            for (CheckResult result : results) {
                Map<String, Object> check = new LinkedHashMap<>();
                check.put("name", result.name());
                check.put("status", result.status().name());
                check.put("detail", result.detail());
                check.putAll(result.measured());
                checks.add(check);
            }
            Map<String, Object> summary = new LinkedHashMap<>();
            summary.put("root", layout.root().toString());
            summary.put("fs_type", fsType);
            summary.put("io", ioCheck.measured().get("io"));
            summary.put("io_reason", ioCheck.detail());
            summary.put("master", master == null ? "" : master);
            summary.put("timeout_ms", limit.toMillis());
            for (CheckResult.Status status : CheckResult.Status.values()) {
                summary.put(status.name().toLowerCase(Locale.ROOT), counts.get(status));
            }
            summary.put("fit", fit);
            summary.put("layout_overrides", overrides);
            Map<String, Object> report = new LinkedHashMap<>();
            report.put("checks", checks);
            report.put("summary", summary);
            out.println(OutputMixin.toJson(report));
        } else {
            Table table = new Table("CHECK", "STATUS", "DETAIL");
            for (CheckResult result : results) {
                table.row(result.name(), result.status(), result.detail());
            }
            out.print(table.render());
            out.println(layout.root() + ": " + counts.get(CheckResult.Status.PASS) + " passed, " + counts.get(CheckResult.Status.WARN)
                    + " warned, " + counts.get(CheckResult.Status.FAIL) + " failed, " + counts.get(CheckResult.Status.SKIP) + " skipped; "
                    + (fit ? "fit to join" : "not fit to join"));
        }
        out.flush();
        return fit ? ExitCodes.OK : ExitCodes.FAILED;
    }

    /** The check of the master's own view of the bucket files: the buckets it takes no allocations into, by name. */
    static final String MASTER_BUCKETS = "master-buckets";

    /**
     * How the master last found each bucket file (GetStats): a bucket whose file it found missing or replaced takes no
     * allocations, whatever this node sees. A WARN naming them; SKIP when the master does not say (an older master, or
     * this caller may not read its stats).
     */
    static CheckResult masterBuckets(MasterClient client) {
        GetStatsResponse stats;
        try {
            stats = client.stats();
        } catch (MasterException e) {
            return CheckResult.skip(MASTER_BUCKETS, "the master's view of the bucket files could not be read: " + e.getMessage());
        }
        List<String> unusable = new ArrayList<>();
        StringBuilder buckets = new StringBuilder();
        for (BucketStats bucket : stats.getBucketsList()) {
            if (bucket.getFileState() != BucketFileState.BUCKET_FILE_HEALTHY) {
                unusable.add("bucket file " + bucket.getBucket() + " (" + BucketLayout.bucketFileName(bucket.getBucket()) + ") "
                        + TierStatsReport.fileState(bucket.getFileState()));
                buckets.append(buckets.length() == 0 ? "" : ",").append(bucket.getBucket());
            }
        }
        Map<String, Object> measured = new LinkedHashMap<>();
        measured.put("unusable", unusable.size());
        measured.put("unusable_buckets", buckets.toString());
        if (unusable.isEmpty()) {
            return CheckResult.pass(MASTER_BUCKETS, "the master finds all " + stats.getBucketsCount() + " bucket files as it laid them out",
                    measured);
        }
        return CheckResult.warn(MASTER_BUCKETS, "the master takes no allocations into " + unusable.size() + " bucket(s) whose files it found "
                + "missing or replaced: " + String.join(", ", unusable) + "; restore the files or restart the master "
                + "(docs/operator-guide.md, \"Bucket file health\")", measured);
    }

    /**
     * The layout to check: the root's layout record where it has one, for each of bucket_count, page_size and bucket_size
     * left at its default; a value set by flag, environment or file stays in force, and one that disagrees with the record
     * is noted in {@code overrides} (the layout check then fails naming both). Without a readable record, the settings.
     */
    static BucketLayout withLayoutRecord(EffectiveConfig config, BucketLayout settings, List<String> overrides) {
        LayoutFile.Record record;
        try {
            record = LayoutFile.read(settings.layoutFile());
        } catch (java.io.IOException | RuntimeException e) {
            return settings; // none yet, or unreadable: the layout check says which
        }
        int count = (int) pick(config, StorageSettings.BUCKET_COUNT, record.bucketCount(), settings.layoutFile(), overrides, String::valueOf);
        long page = pick(config, StorageSettings.PAGE_SIZE, record.pageSize(), settings.layoutFile(), overrides, SizeParser::format);
        long bucket = pick(config, StorageSettings.BUCKET_SIZE, record.bucketSize(), settings.layoutFile(), overrides, SizeParser::format);
        try {
            return new BucketLayout(settings.root(), count, page, bucket);
        } catch (IllegalArgumentException e) {
            throw new CliException(ExitCodes.USAGE, "the settings and the layout record " + settings.layoutFile() + " together give no layout: "
                    + e.getMessage() + " (" + String.join("; ", overrides) + ")");
        }
    }

    private static long pick(EffectiveConfig config, Setting<? extends Number> setting, long recorded, java.nio.file.Path file,
                             List<String> overrides, java.util.function.LongFunction<String> format) {
        EffectiveConfig.Entry entry = config.entry(setting);
        long value = ((Number) entry.value()).longValue();
        if (entry.source() == EffectiveConfig.SourceKind.DEFAULT) {
            return recorded;
        }
        if (value != recorded) {
            overrides.add(setting.key() + " " + format.apply(value) + " (from " + entry.describeSource() + ") overrides "
                    + format.apply(recorded) + " in the layout record " + file);
        }
        return value;
    }

    private Duration parseTimeout() {
        Duration limit;
        try {
            limit = DurationParser.parse(timeout);
        } catch (IllegalArgumentException e) {
            throw new CliException(ExitCodes.USAGE, "invalid --timeout '" + timeout + "': allowed is " + DurationParser.ALLOWED);
        }
        if (limit.isZero()) {
            throw new CliException(ExitCodes.USAGE, "invalid --timeout '" + timeout + "': allowed is more than zero");
        }
        return limit;
    }
}
