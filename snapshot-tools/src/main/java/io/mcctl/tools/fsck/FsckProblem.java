package io.mcctl.tools.fsck;

import io.mcctl.tools.snapshot.Problem;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * One thing fsck found: a {@link Problem} with the check that found it and, for an object, its tenant and key.
 *
 * @param check  a stable name: {@code recovery}, {@code claims}, {@code bucket_file}, {@code range}, {@code unexpected_file},
 *               {@code object}
 * @param tenant the object's tenant, or null
 * @param key    the object's key, or null
 */
public record FsckProblem(Problem problem, String check, String tenant, String key) {

    static FsckProblem error(String check, Path file, long offset, String message) {
        return new FsckProblem(Problem.error(file, offset, message), check, null, null);
    }

    static FsckProblem warning(String check, Path file, long offset, String message) {
        return new FsckProblem(Problem.warning(file, offset, message), check, null, null);
    }

    public boolean isError() {
        return problem.isError();
    }

    /** {@code error: FILE at byte N: message}. */
    public String text() {
        return problem.text();
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
