package io.mcctl.master.events;

import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.msgpack.core.MessagePack;
import org.msgpack.core.MessageUnpacker;
import org.msgpack.value.Value;

/**
 * Reads a published KV event payload the way vLLM's and llm-d's decoders do (for {@code mcctl events tail}): the batch
 * positional ({@code [ts, events, data_parallel_rank?]}) or a map, each event a map tagged by {@code type} or a
 * positional {@code [tag, ...]} as older vLLM versions sent; unknown fields kept as they are.
 */
public final class KvEventDecoder {

    /** A decoded batch: its timestamp (seconds) and events, each field name to a plain Java value (hashes as unsigned decimal text). */
    public record Batch(double ts, List<Map<String, Object>> events) {
    }

    private static final List<String> STORED = List.of("block_hashes", "parent_block_hash", "token_ids", "block_size", "lora_id", "medium",
            "lora_name", "extra_keys", "group_idx", "kv_cache_spec_kind", "kv_cache_spec_sliding_window");
    private static final List<String> REMOVED = List.of("block_hashes", "medium", "group_idx");

    private KvEventDecoder() {
    }

    /** @throws IOException when the payload is not a KV event batch (one line saying what was found) */
    public static Batch decode(byte[] payload) throws IOException {
        Value batch;
        try (MessageUnpacker in = MessagePack.newDefaultUnpacker(payload)) {
            batch = in.unpackValue();
        } catch (IOException | RuntimeException e) {
            throw new IOException("not a MessagePack payload: " + e.getMessage(), e);
        }
        Value ts;
        Value events;
        if (batch.isArrayValue() && batch.asArrayValue().size() >= 2) {
            ts = batch.asArrayValue().get(0);
            events = batch.asArrayValue().get(1);
        } else if (batch.isMapValue()) {
            Map<String, Value> fields = fields(batch);
            ts = fields.get("ts");
            events = fields.get("events");
        } else {
            throw new IOException("not a KV event batch: " + batch.getValueType().name().toLowerCase(java.util.Locale.ROOT) + " at the top");
        }
        if (ts == null || !ts.isNumberValue() || events == null || !events.isArrayValue()) {
            throw new IOException("not a KV event batch: no ts and events");
        }
        List<Map<String, Object>> out = new ArrayList<>();
        for (Value event : events.asArrayValue()) {
            Map<String, Object> decoded = new LinkedHashMap<>();
            if (event.isMapValue()) {
                fields(event).forEach((k, v) -> decoded.put(k, plain(v)));
            } else if (event.isArrayValue() && event.asArrayValue().size() > 0) {
                List<Value> positional = event.asArrayValue().list();
                String tag = positional.get(0).toString();
                decoded.put("type", tag);
                List<String> names = tag.equals("BlockStored") ? STORED : tag.equals("BlockRemoved") ? REMOVED : List.of();
                for (int i = 1; i < positional.size() && i - 1 < names.size(); i++) {
                    decoded.put(names.get(i - 1), plain(positional.get(i)));
                }
            } else {
                throw new IOException("not a KV event: " + event);
            }
            out.add(decoded);
        }
        return new Batch(ts.isFloatValue() ? ts.asFloatValue().toDouble() : ts.asNumberValue().toDouble(), out);
    }

    private static Map<String, Value> fields(Value map) {
        Map<String, Value> fields = new LinkedHashMap<>();
        map.asMapValue().map().forEach((k, v) -> fields.put(k.isStringValue() ? k.asStringValue().asString() : k.toString(), v));
        return fields;
    }

    private static Object plain(Value v) {
        if (v.isNilValue()) {
            return null;
        }
        if (v.isIntegerValue()) {
            return v.asIntegerValue().isInLongRange() ? (Object) v.asIntegerValue().toLong() : v.asIntegerValue().asBigInteger();
        }
        if (v.isFloatValue()) {
            return v.asFloatValue().toDouble();
        }
        if (v.isBooleanValue()) {
            return v.asBooleanValue().getBoolean();
        }
        if (v.isStringValue()) {
            return v.asStringValue().asString();
        }
        if (v.isBinaryValue()) {
            return java.util.HexFormat.of().formatHex(v.asBinaryValue().asByteArray());
        }
        if (v.isArrayValue()) {
            List<Object> list = new ArrayList<>();
            v.asArrayValue().forEach(e -> list.add(plain(e)));
            return list;
        }
        Map<String, Object> map = new LinkedHashMap<>();
        fields(v).forEach((k, e) -> map.put(k, plain(e)));
        return map;
    }
}
