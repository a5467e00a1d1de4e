package io.mcctl.cli.command;

import io.mcctl.cli.CliException;
import io.mcctl.cli.ExitCodes;
import io.mcctl.cli.MasterOptions;
import io.mcctl.cli.OutputMixin;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.proto.v1.GrowLayoutResponse;
import io.mcctl.storage.config.SizeParser;
import io.mcctl.storage.layout.SpaceBacking;
import java.io.PrintWriter;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code mcctl layout grow --bucket-size SIZE}: larger buckets while the master serves. */
@Command(name = "grow", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Grow every bucket file to a larger bucket size while the master serves: the files are extended (never "
                + "shrunk or truncated), the master's allocators grow, the new size is logged and written to mooncake.layout.json, "
                + "and nodes learn it from the master. Shrinking is refused. Safe to run again after a crash. An admin's call.",
                "",
                "Example: mcctl layout grow --bucket-size 8GiB"})
public final class LayoutGrowCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Option(names = "--bucket-size", required = true, paramLabel = "SIZE",
            description = "The new size of every bucket (e.g. 8GiB): a multiple of the page size, at least the current size.")
    String bucketSize;

    @Option(names = "--preallocate", description = "Also reserve real space for the whole new size (fallocate), so that writes "
            + "into it cannot fail for want of space.")
    boolean preallocate;

    @Mixin
    MasterOptions client;

    @Mixin
    OutputMixin output;

    @Override
    public Integer call() {
        long bytes;
        try {
            bytes = SizeParser.parse(bucketSize);
        } catch (IllegalArgumentException e) {
            throw new CliException(ExitCodes.USAGE, "invalid --bucket-size '" + bucketSize + "': allowed is a size such as 8GiB or 512MiB");
        }
        if (bytes <= 0) {
            throw new CliException(ExitCodes.USAGE, "invalid --bucket-size '" + bucketSize + "': allowed is a size above zero");
        }
        GrowLayoutResponse answer;
        try (MasterClient master = client.connect(spec)) {
            answer = master.growLayout(bytes, preallocate);
        }
        PrintWriter out = spec.commandLine().getOut();
        if (output.json()) {
            Map<String, Object> report = new LinkedHashMap<>();
            report.put("previous_bucket_size", answer.getPreviousBucketSize());
            report.put("bucket_size", answer.getBucketSize());
            report.put("files_extended", answer.getFilesExtended());
            report.put("pages_total", answer.getPagesTotal());
            report.put("preallocated", preallocate);
            out.println(OutputMixin.toJson(report));
        } else if (answer.getPreviousBucketSize() == answer.getBucketSize()) {
            out.printf("buckets are already %s (%d bytes): nothing to grow%s%n", SpaceBacking.bytes(answer.getBucketSize()),
                    answer.getBucketSize(), answer.getFilesExtended() > 0 ? "; " + answer.getFilesExtended() + " short files extended" : "");
        } else {
            out.printf("buckets grown from %s to %s (%d bytes): %d files extended, %d pages in all%s%n",
                    SpaceBacking.bytes(answer.getPreviousBucketSize()), SpaceBacking.bytes(answer.getBucketSize()), answer.getBucketSize(),
                    answer.getFilesExtended(), answer.getPagesTotal(), preallocate ? ", space reserved" : "");
        }
        out.flush();
        return ExitCodes.OK;
    }
}
