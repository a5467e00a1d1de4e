package io.mcctl.testkit;

import io.mcctl.master.client.TierWriter;
import io.mcctl.storage.layout.BucketLayout;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/** Objects whose bytes follow from their key, and keys chosen by home bucket. */
public final class TestObjects {

    private TestObjects() {
    }

    /** {@code size} bytes derived from {@code key} (and the size), different for every key. */
    public static byte[] content(String key, int size) {
        SplittableRandom random = new SplittableRandom(seedOf(key) * 31 + size);
        byte[] bytes = new byte[size];
        for (int i = 0; i < size; i++) {
            bytes[i] = (byte) random.nextInt(256);
        }
        byte[] name = key.getBytes(StandardCharsets.UTF_8);
        System.arraycopy(name, 0, bytes, 0, Math.min(name.length, size)); // the key itself leads, for humans reading a dump
        return bytes;
    }

    private static long seedOf(String key) {
        long h = 1125899906842597L;
        for (byte b : key.getBytes(StandardCharsets.UTF_8)) {
            h = 31 * h + b;
        }
        return h;
    }

    /** An object whose content is {@link #content}, split into up to three parts (a gather write). */
    public static TierWriter.ObjectSource object(String key, int size) {
        byte[] bytes = content(key, size);
        List<ByteBuffer> parts = new ArrayList<>();
        int cut1 = size / 3;
        int cut2 = 2 * size / 3;
        parts.add(ByteBuffer.wrap(bytes, 0, cut1).slice());
        parts.add(ByteBuffer.wrap(bytes, cut1, cut2 - cut1).slice());
        parts.add(ByteBuffer.wrap(bytes, cut2, size - cut2).slice());
        return new TierWriter.ObjectSource(key, parts);
    }

    /** The bytes left in {@code buffer}, without moving it. */
    public static byte[] bytesOf(ByteBuffer buffer) {
        ByteBuffer copy = buffer.duplicate();
        byte[] bytes = new byte[copy.remaining()];
        copy.get(bytes);
        return bytes;
    }

    /** {@code count} distinct keys {@code prefix + n} whose home bucket is {@code bucket}. */
    public static List<String> keysWithHome(BucketLayout layout, int bucket, String prefix, int count) {
        List<String> keys = new ArrayList<>();
        for (int n = 0; keys.size() < count; n++) {
            if (n > 1_000_000) {
                throw new IllegalStateException("no " + count + " keys with home bucket " + bucket);
            }
            String key = prefix + n;
            if (layout.homeBucket(key) == bucket) {
                keys.add(key);
            }
        }
        return keys;
    }
}
