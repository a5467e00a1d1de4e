package io.mcctl.cli.bench;

import io.mcctl.cli.util.Rounding;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.proto.v1.GetBucketBitmapResponse;
import io.mcctl.storage.alloc.FragmentationScore;
import io.mcctl.tools.bitmap.BucketBitmap;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The tier's free space at one moment, from every bucket's bitmap (GetBucketBitmap): the fragmentation score of all free
 * runs together (0: each bucket's free space in one run; towards 1: single pages), the mean and worst of the buckets'
 * scores, the used share, and the longest free run of the emptiest and fullest bucket in pages.
 */
public record TierFragmentation(long request, double score, double meanBucketScore, double worstBucketScore, double usedShare,
                                long smallestLargestFreeRun, long largestFreeRun) {

    public static TierFragmentation sample(MasterClient client, long request) {
        int buckets = client.layout().getBucketCount();
        long pageSize = client.layout().getPageSize();
        FragmentationScore all = new FragmentationScore(pageSize);
        double scores = 0;
        double worst = 0;
        long used = 0;
        long pages = 0;
        long smallest = Long.MAX_VALUE;
        long largest = 0;
        for (int b = 0; b < buckets; b++) {
            GetBucketBitmapResponse wire = client.bucketBitmap(b);
            long[] words = wire.getWordsList().stream().mapToLong(Long::longValue).toArray();
            BucketBitmap bitmap = new BucketBitmap(wire.getPageCount(), words);
            FragmentationScore bucket = new FragmentationScore(pageSize);
            long[] longest = {0};
            bitmap.forEachFreeRun((first, length) -> {
                all.addFreeRun(length);
                bucket.addFreeRun(length);
                longest[0] = Math.max(longest[0], length);
            });
            scores += bucket.score();
            worst = Math.max(worst, bucket.score());
            used += bitmap.allocatedPages();
            pages += bitmap.pageCount();
            smallest = Math.min(smallest, longest[0]);
            largest = Math.max(largest, longest[0]);
        }
        return new TierFragmentation(request, all.score(), scores / buckets, worst, pages == 0 ? 0 : (double) used / pages,
                smallest, largest);
    }

    public Map<String, Object> json() {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("request", request);
        out.put("fragmentation_score", Rounding.round(score, 4));
        out.put("bucket_score_mean", Rounding.round(meanBucketScore, 4));
        out.put("bucket_score_worst", Rounding.round(worstBucketScore, 4));
        out.put("used_share", Rounding.round(usedShare, 4));
        out.put("largest_free_run_pages_min", smallestLargestFreeRun);
        out.put("largest_free_run_pages_max", largestFreeRun);
        return out;
    }
}
