package io.mcctl.cli.command;

import io.mcctl.cli.CliException;
import io.mcctl.cli.ExitCodes;
import io.mcctl.cli.OutputMixin;
import io.mcctl.cli.Table;
import io.mcctl.cli.util.Plurals;
import io.mcctl.cli.util.StatePaths;
import io.mcctl.master.proto.v1.SnapshotMeta;
import io.mcctl.master.protocol.KeyRules;
import io.mcctl.tools.snapshot.Formats;
import io.mcctl.tools.snapshot.Problem;
import io.mcctl.tools.snapshot.SnapshotInspector;
import io.mcctl.tools.snapshot.SnapshotRecords;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/** {@code mcctl snapshot inspect}: what one snapshot holds. */
@Command(name = "inspect", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Show a snapshot's header, meta record (cluster, root, layout, covered WAL sequence, creation time, settings), "
                + "section table with each checksum checked, and counters: mappings, in-flight allocations, quarantined ranges and pages, "
                + "tenants, and pages used per bucket (mappings, in flight and quarantine; the text lists only buckets in use).",
                "With --keys, also its mappings in tenant and key order. A section that fails its checksum is shown and the command "
                        + "exits 1; 'mcctl snapshot verify' checks everything."})
public final class SnapshotInspectCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Mixin
    OutputMixin output;

    @Parameters(index = "0", paramLabel = "SNAPSHOT", description = "A snapshot file, snapshot-<sequence>.snap.")
    Path file;

    @Option(names = "--keys", description = "List the mappings: tenant, key, bucket, offset, size, pages, CRC32C.")
    boolean keys;

    @Option(names = "--tenant", paramLabel = "T", description = "Only the keys of tenant T (implies --keys).")
    String tenant;

    @Option(names = "--prefix", paramLabel = "P", defaultValue = "", description = "Only keys that start with P (implies --keys).")
    String prefix;

    @Option(names = "--limit", paramLabel = "N", defaultValue = "0", description = "At most N keys, the first in order (default: all; implies --keys).")
    long limit;

    @Override
    public Integer call() throws IOException {
        if (limit < 0) {
            throw new CliException(ExitCodes.USAGE, "invalid --limit " + limit + ": allowed is 0 (all) or more");
        }
        if (tenant != null && KeyRules.checkTenant(tenant) != null) {
            throw new CliException(ExitCodes.USAGE, "invalid --tenant: " + KeyRules.checkTenant(tenant));
        }
        StatePaths.requireSnapshotFile(file, "mcctl snapshot inspect");
        io.mcctl.cli.LiveState.warnIfLive(spec.commandLine().getErr(), file);
        boolean list = keys || tenant != null || !prefix.isEmpty() || limit > 0;
        SnapshotInspector.Report report = SnapshotInspector.inspect(file,
                list ? new SnapshotInspector.KeyFilter(true, tenant, prefix, limit) : SnapshotInspector.KeyFilter.NONE);
        PrintWriter out = spec.commandLine().getOut();
        if (output.json()) {
            out.println(OutputMixin.toJson(report.json()));
        } else {
            printText(out, report);
        }
        out.flush();
        if (!report.ok()) {
            Problem first = report.problems().get(0);
            throw new CliException(ExitCodes.FAILED, first.file() + " at byte " + first.offset() + ": " + first.message()
                    + (report.problems().size() > 1 ? " (and " + (report.problems().size() - 1) + " more)" : "")
                    + "; run 'mcctl snapshot verify " + file + "' for every problem");
        }
        return ExitCodes.OK;
    }

    private static void printText(PrintWriter out, SnapshotInspector.Report r) {
        SnapshotMeta meta = r.meta();
        Table head = new Table("snapshot", r.path().toString());
        head.row("format", "version " + r.formatVersion());
        head.row("cluster", meta.getClusterId());
        head.row("root", meta.getRootDir());
        head.row("layout", meta.getBucketCount() + " buckets of " + meta.getBucketSize() + " bytes, pages of " + meta.getPageSize()
                + " bytes (" + r.layout().pagesPerBucket() + " pages per bucket)");
        head.row("covers", "WAL records up to " + meta.getWalSequence());
        head.row("created", Formats.iso(meta.getCreatedMs()));
        Map<String, String> settings = new TreeMap<>(meta.getSettingsMap());
        head.row("settings", settings.isEmpty() ? "(none)" : "");
        for (Map.Entry<String, String> e : settings.entrySet()) {
            head.row("  " + e.getKey(), e.getValue());
        }
        out.print(head.render());
        out.println();

        Table sections = new Table("SECTION", "OFFSET", "BYTES", "RECORDS", "CRC32C", "CHECK");
        for (SnapshotRecords.SectionStatus s : r.sections()) {
            sections.row(s.info().section(), s.info().offset(), s.info().length(), s.info().records(), Formats.hex(s.info().crc32c()),
                    s.crcOk() ? "ok" : "FAILS (computed " + Formats.hex(s.actualCrc32c()) + ")");
        }
        out.print(sections.render());
        out.println();

        SnapshotInspector.Counters c = r.counters();
        Table counters = new Table("mappings", String.valueOf(c.mappings()));
        counters.row("in flight", c.inFlight());
        counters.row("quarantined", Plurals.plural(c.quarantinedRanges(), "range") + ", "
                + Plurals.plural(c.quarantinedPages(), "page"));
        if (r.meta() != null && r.meta().getReservationsCount() > 0) {
            // Open when the snapshot was taken: a recovery from it holds their free pages until their hold times.
            counters.row("reservations", Plurals.plural(r.meta().getReservationsCount(), "range") + " open, holding free pages "
                    + "until " + Formats.iso(r.meta().getReservationsList().stream().mapToLong(io.mcctl.master.proto.v1.Reserved::getHoldUntilMs)
                    .max().orElse(0)) + " after a crash");
        }
        counters.row("tenants", c.tenants());
        counters.row("pages used", c.pagesUsed() + " of " + c.pagesTotal());
        out.print(counters.render());
        out.println();

        Table buckets = new Table("BUCKET", "PAGES_USED");
        int inUse = 0;
        for (int b = 0; b < r.pagesPerBucket().length; b++) {
            if (r.pagesPerBucket()[b] != 0) {
                buckets.row(b, r.pagesPerBucket()[b]);
                inUse++;
            }
        }
        if (inUse == 0) {
            out.println("no bucket has pages in use");
        } else {
            out.print(buckets.render());
        }

        if (r.keys() != null) {
            out.println();
            Table keys = new Table("TENANT", "KEY", "BUCKET", "OFFSET", "SIZE", "PAGES", "CRC32C");
            for (SnapshotInspector.KeyEntry k : r.keys()) {
                keys.row(Formats.quote(k.tenant()), Formats.quote(k.key()), k.bucket(), k.offset(), k.size(), k.pages(), Formats.hex(k.crc32c()));
            }
            out.print(keys.render());
            out.println(r.keys().size() == r.keysMatching() ? Plurals.plural(r.keysMatching(), "key")
                    : r.keys().size() + " of " + Plurals.plural(r.keysMatching(), "matching key") + " (--limit)");
        }
        for (Problem p : r.problems()) {
            out.println(p.text());
        }
    }
}
