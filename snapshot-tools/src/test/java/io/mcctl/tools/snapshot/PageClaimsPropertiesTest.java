package io.mcctl.tools.snapshot;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.mcctl.master.proto.v1.QuarantineRecord;
import io.mcctl.storage.layout.BucketLayout;
import io.mcctl.testkit.StateFixture;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.junit.jupiter.api.Timeout;

/** {@link PageClaims} against a model that compares every pair of claims page by page. */
@Timeout(60)
class PageClaimsPropertiesTest {

    static final BucketLayout LAYOUT = new BucketLayout(Path.of("/nonexistent"), 3, 4096, 64 * 4096);

    record Spec(int kind, int bucket, long firstPage, long pages) {
    }

    @Provide
    Arbitrary<List<Spec>> claims() {
        Arbitrary<Spec> one = Combinators.combine(Arbitraries.integers().between(0, 2), Arbitraries.integers().between(0, 2),
                Arbitraries.longs().between(0, 63), Arbitraries.longs().between(1, 12)).as(Spec::new);
        return one.list().ofMaxSize(25);
    }

    @Property(tries = 300)
    void every_overlapping_pair_is_named_once_and_no_other(@ForAll("claims") List<Spec> specs) throws Exception {
        List<PageClaims.Claim> claims = new ArrayList<>();
        for (int i = 0; i < specs.size(); i++) {
            Spec s = specs.get(i);
            PageClaims.Kind kind = PageClaims.Kind.values()[s.kind()];
            claims.add(kind == PageClaims.Kind.QUARANTINE
                    ? PageClaims.quarantine(QuarantineRecord.newBuilder().setBucket(s.bucket()).setFirstPage(s.firstPage()).setPages(s.pages()).build(),
                    4096, null, i)
                    : PageClaims.placement(kind, "t", "k" + i, StateFixture.placement(s.bucket(), s.firstPage() * 4096, s.pages() * 4096 - 7, 0),
                    4096, null, i));
        }
        PageClaims.Result result = PageClaims.check(LAYOUT, sink -> claims.forEach(sink), "");

        Set<Long> valid = new HashSet<>();
        long invalid = 0;
        for (int i = 0; i < claims.size(); i++) {
            if (specs.get(i).firstPage() + specs.get(i).pages() <= 64) {
                valid.add((long) i);
            } else {
                invalid++;
            }
        }
        // Each overlapping pair once, later claim first, as "LATER overlaps EARLIER on pages [from, to)".
        List<String> expected = new ArrayList<>();
        for (int i = 0; i < specs.size(); i++) {
            for (int j = i + 1; j < specs.size(); j++) {
                Spec a = specs.get(i);
                Spec b = specs.get(j);
                long from = Math.max(a.firstPage(), b.firstPage());
                long to = Math.min(a.firstPage() + a.pages(), b.firstPage() + b.pages());
                if (valid.contains((long) i) && valid.contains((long) j) && a.bucket() == b.bucket() && from < to) {
                    expected.add(claims.get(j).describe() + " overlaps " + claims.get(i).describe() + " on pages [" + from + ", " + to + ")");
                }
            }
        }
        List<String> named = new ArrayList<>();
        long invalidReported = 0;
        for (Problem p : result.problems()) {
            if (p.message().contains(" overlaps ")) {
                named.add(p.message());
            } else {
                invalidReported++;
            }
        }
        expected.sort(null);
        named.sort(null);
        assertEquals(expected, named);
        assertEquals(invalid, invalidReported);
        assertEquals(invalid, result.invalid());
    }
}
