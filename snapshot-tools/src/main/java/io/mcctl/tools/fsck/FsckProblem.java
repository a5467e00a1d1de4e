package io.mcctl.tools.fsck;

import io.mcctl.tools.snapshot.Problem;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * One thing fsck found: a {@link Problem} with the check that found it and, for an object, its tenant and key.
 *
 * @param check     a stable name: {@code recovery}, {@code claims}, {@code bucket_file}, {@code range}, {@code unexpected_file},
 *                  {@code object}, and on a live master {@code leaked}, {@code young}, {@code false_free}, {@code overlap},
 *                  {@code counter}
 * @param tenant    the object's tenant, or null
 * @param key       the object's key, or null
 * @param corrected whether this run repaired it (an error no longer)
 */
public record FsckProblem(Problem problem, String check, String tenant, String key, boolean corrected) {

    public FsckProblem(Problem problem, String check, String tenant, String key) {
        this(problem, check, tenant, key, false);
    }

    static FsckProblem error(String check, Path file, long offset, String message) {
        return new FsckProblem(Problem.error(file, offset, message), check, null, null);
    }

    static FsckProblem warning(String check, Path file, long offset, String message) {
        return new FsckProblem(Problem.warning(file, offset, message), check, null, null);
    }

    /** An error still there after the run. */
    public boolean isError() {
        return problem.isError() && !corrected;
    }

    public boolean isWarning() {
        return !problem.isError();
    }

    /** {@code error: FILE at byte N: message}, or {@code corrected: ...} for a repaired error. */
    public String text() {
        return corrected ? "corrected" + problem.text().substring(problem.severity().label().length()) : problem.text();
    }

    public Map<String, Object> json() {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("check", check);
        out.put("file", problem.file() == null ? null : problem.file().toString());
        out.put("offset", problem.offset() >= 0 ? problem.offset() : null);
        if (key != null) {
            out.put("tenant", tenant);
            out.put("key", key);
        }
        out.put("message", problem.message());
        return out;
    }
}
