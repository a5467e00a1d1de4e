package io.mcctl.master.events;

import io.mcctl.master.service.Change;
import io.mcctl.master.service.KvBlocks;
import io.mcctl.master.service.KvEventHistory;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.List;
import java.util.Locale;
import org.msgpack.core.MessageBufferPacker;
import org.msgpack.core.MessagePack;
import org.msgpack.core.MessagePacker;

/**
 * A tenant's batch of KV events as vLLM encodes a {@code KVEventBatch} (vllm/distributed/kv_events.py; field layout and the
 * commits read in docs/wire-protocol.md, "KV events"): the batch a positional array {@code [ts, events]} (no
 * data-parallel rank: the shared tier has none), each event a map tagged by {@code type}, its fields named as vLLM names
 * them, in vLLM's order, the optional ones left out unless set. mcctl adds {@code reason} to {@code BlockRemoved}
 * (removed, overwritten, or how it was evicted): decoders that follow vLLM's rules skip fields they do not know.
 */
public final class KvEventEncoder {

    /** The medium every event names: vLLM's name for a storage tier below the engine's memory. */
    public static final String MEDIUM = "STORAGE";
    /** The locality every event names: the shared tier is local to no engine pod. */
    public static final String LOCALITY = "REMOTE";

    private KvEventEncoder() {
    }

    /** The events {@code events} announce, in order: a commit that replaced a mapping with blocks first removes those. */
    static int eventCount(List<KvEventHistory.Event> events) {
        int n = 0;
        for (KvEventHistory.Event event : events) {
            if (event.change() instanceof Change.Committed c) {
                n += (c.replacedBlockHashes() != null ? 1 : 0) + (c.blocks() != null ? 1 : 0);
            } else {
                n++;
            }
        }
        return n;
    }

    /**
     * The msgpack payload of one batch.
     *
     * @param sealedMs  when the batch was sealed (its timestamp, seconds as a float, as vLLM's {@code ts})
     * @param ownership the tier's name for {@code ownership} (vLLM: the secondary tier that generated the event)
     */
    public static byte[] batch(long sealedMs, List<KvEventHistory.Event> events, String ownership) {
        return new Fragments(ownership).batch(sealedMs, events);
    }

    /**
     * The parts of every event that never change (field names, the medium, locality and ownership), packed once by
     * msgpack-core and copied into each event: packing them anew for every event was most of the publisher's CPU.
     */
    static final class Fragments {
        private final byte[] storedHead;     // map header, type, "block_hashes" key
        private final byte[] parentKey;
        private final byte[] tokensKey;
        private final byte[] blockSizeKey;
        private final byte[] storedMiddle;   // lora_id nil, medium, "lora_name" key
        private final byte[] tail;           // locality, ownership
        private final byte[] removedHead;    // map header, type, "block_hashes" key
        private final byte[] removedMiddle;  // medium, then the tail, then "reason" key
        private final java.util.Map<Change.RemoveReason, byte[]> reasons = new java.util.EnumMap<>(Change.RemoveReason.class);
        private final byte[] overwritten;
        /** One uint64 hash being written: the publisher thread's own, as is the whole encoder. */
        private final byte[] scratch = new byte[9];

        Fragments(String ownership) {
            storedHead = packed(out -> {
                out.packMapHeader(10);
                out.packString("type").packString("BlockStored");
                out.packString("block_hashes");
            });
            parentKey = packed(out -> out.packString("parent_block_hash"));
            tokensKey = packed(out -> out.packString("token_ids"));
            blockSizeKey = packed(out -> out.packString("block_size"));
            storedMiddle = packed(out -> {
                out.packString("lora_id").packNil();
                out.packString("medium").packString(MEDIUM);
                out.packString("lora_name");
            });
            tail = packed(out -> {
                out.packString("locality").packString(LOCALITY);
                out.packString("ownership").packString(ownership);
            });
            removedHead = packed(out -> {
                out.packMapHeader(6);
                out.packString("type").packString("BlockRemoved");
                out.packString("block_hashes");
            });
            removedMiddle = packed(out -> {
                out.packString("medium").packString(MEDIUM);
                out.packString("locality").packString(LOCALITY);
                out.packString("ownership").packString(ownership);
                out.packString("reason");
            });
            for (Change.RemoveReason reason : Change.RemoveReason.values()) {
                reasons.put(reason, packed(out -> out.packString(reason(reason))));
            }
            overwritten = packed(out -> out.packString("overwritten"));
        }

        byte[] batch(long sealedMs, List<KvEventHistory.Event> events) {
            try (MessageBufferPacker out = MessagePack.newDefaultBufferPacker()) {
                out.packArrayHeader(2);
                out.packDouble(sealedMs / 1000.0);
                out.packArrayHeader(eventCount(events));
                for (KvEventHistory.Event event : events) {
                    if (event.change() instanceof Change.Committed c) {
                        if (c.replacedBlockHashes() != null) {
                            removed(out, c.replacedBlockHashes(), overwritten);
                        }
                        if (c.blocks() != null) {
                            stored(out, c.blocks());
                        }
                    } else {
                        Change.Removed r = (Change.Removed) event.change();
                        removed(out, r.blockHashes(), reasons.get(r.reason()));
                    }
                }
                return out.toByteArray();
            } catch (IOException e) {
                throw new UncheckedIOException(e); // a buffer packer does no IO
            }
        }

        private void stored(MessagePacker out, KvBlocks blocks) throws IOException {
            out.writePayload(storedHead);
            hashes(out, blocks.blockHashes(), scratch);
            out.writePayload(parentKey);
            if (blocks.hasParent()) {
                hash(out, blocks.parentBlockHash(), scratch);
            } else {
                out.packNil();
            }
            out.writePayload(tokensKey);
            out.packArrayHeader(blocks.tokenIds().length);
            for (int token : blocks.tokenIds()) {
                out.packLong(token & 0xFFFFFFFFL);
            }
            out.writePayload(blockSizeKey);
            out.packInt(blocks.blockSize());
            out.writePayload(storedMiddle);
            if (blocks.loraName().isEmpty()) {
                out.packNil();
            } else {
                out.packString(blocks.loraName());
            }
            out.writePayload(tail);
        }

        private void removed(MessagePacker out, long[] hashes, byte[] reason) throws IOException {
            out.writePayload(removedHead);
            hashes(out, hashes, scratch);
            out.writePayload(removedMiddle);
            out.writePayload(reason);
        }

        private interface Packing {
            void pack(MessagePacker out) throws IOException;
        }

        private static byte[] packed(Packing packing) {
            try (MessageBufferPacker out = MessagePack.newDefaultBufferPacker()) {
                packing.pack(out);
                return out.toByteArray();
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
    }

    /** {@code BlockRemoved.reason}: removed (by a client), overwritten, evicted_watermark, evicted_allocation, evicted_quota. */
    static String reason(Change.RemoveReason reason) {
        return reason.name().toLowerCase(Locale.ROOT);
    }

    private static void hashes(MessagePacker out, long[] hashes, byte[] scratch) throws IOException {
        out.packArrayHeader(hashes.length);
        for (long h : hashes) {
            hash(out, h, scratch);
        }
    }

    /**
     * A block hash as vLLM sends an integer hash: an unsigned 64-bit number. One at or above 2^63 is written as the bytes
     * msgpack-core's packBigInteger writes for it (0xcf, then big-endian), through {@code scratch} (9 bytes): no
     * BigInteger parsed from a formatted string for half of all hashes.
     */
    private static void hash(MessagePacker out, long h, byte[] scratch) throws IOException {
        if (h >= 0) {
            out.packLong(h);
        } else {
            scratch[0] = (byte) 0xcf;
            for (int i = 1; i <= 8; i++) {
                scratch[i] = (byte) (h >>> (64 - 8 * i));
            }
            out.writePayload(scratch, 0, 9);
        }
    }
}
