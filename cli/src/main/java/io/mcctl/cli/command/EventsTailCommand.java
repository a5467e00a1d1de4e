package io.mcctl.cli.command;

import io.mcctl.cli.CliException;
import io.mcctl.cli.ExitCodes;
import io.mcctl.cli.OutputMixin;
import io.mcctl.master.events.KvEventDecoder;
import io.mcctl.master.events.KvEventSettings;
import java.io.IOException;
import java.io.PrintWriter;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;
import org.zeromq.ZMsg;

/**
 * {@code mcctl events tail}: subscribes to a master's KV events (or any vLLM-style publisher) and prints one line per
 * event, decoded; with {@code --replay-endpoint} and {@code --from}, first the kept batches from that sequence.
 */
@Command(name = "tail", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Print the KV events a master publishes (kv_events_endpoint), one line per event: the batch's sequence, "
                + "the event's type, its block hashes and fields. Runs until interrupted, or until --count events.",
                "",
                "Example: mcctl events tail --endpoint tcp://master-host:5557 --replay-endpoint tcp://master-host:5657 --from 0"})
public final class EventsTailCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Option(names = "--endpoint", required = true, paramLabel = "ENDPOINT",
            description = "The publisher to subscribe to, e.g. tcp://master-host:5557 (the i-th tenant of kv_events_tenants is on the port plus i).")
    String endpoint;

    @Option(names = "--topic", paramLabel = "TOPIC", defaultValue = "",
            description = "Only batches whose topic starts with TOPIC (default: every topic).")
    String topic;

    @Option(names = "--replay-endpoint", paramLabel = "ENDPOINT",
            description = "The publisher's replay endpoint: with --from, the kept batches from that sequence are printed first.")
    String replayEndpoint;

    @Option(names = "--from", paramLabel = "SEQ", description = "Sequence to replay from (needs --replay-endpoint).")
    Long from;

    @Option(names = "--count", paramLabel = "N", description = "Stop after N events (default: run until interrupted).")
    Long count;

    @Option(names = "--idle-timeout", paramLabel = "SECONDS",
            description = "Stop when nothing arrives for this many seconds (default: wait for ever).")
    Integer idleTimeout;

    @Mixin
    OutputMixin output;

    private long printed;

    @Override
    public Integer call() {
        check("--endpoint", endpoint);
        if (replayEndpoint != null) {
            check("--replay-endpoint", replayEndpoint);
        }
        if (from != null && replayEndpoint == null) {
            throw new CliException(ExitCodes.USAGE, "--from " + from + " needs --replay-endpoint (where the publisher answers replay requests)");
        }
        if ((count != null && count < 1) || (idleTimeout != null && idleTimeout < 1)) {
            throw new CliException(ExitCodes.USAGE, "--count and --idle-timeout are at least 1");
        }
        PrintWriter out = spec.commandLine().getOut();
        try (ZContext context = new ZContext()) {
            ZMQ.Socket sub = context.createSocket(SocketType.SUB);
            sub.setLinger(0);
            sub.connect(endpoint);
            sub.subscribe(topic.getBytes(StandardCharsets.UTF_8));
            sub.setReceiveTimeOut(idleTimeout == null ? -1 : idleTimeout * 1000);
            if (from != null) {
                replay(context, out);
            }
            while (!done()) {
                ZMsg message = ZMsg.recvMsg(sub);
                if (message == null) {
                    break; // idle timeout
                }
                if (message.size() != 3) {
                    continue; // not vLLM's framing
                }
                print(out, message.pop().getString(StandardCharsets.UTF_8), message.pop().getData(), message.pop().getData());
            }
        }
        return 0;
    }

    private boolean done() {
        return count != null && printed >= count;
    }

    private static void check(String option, String value) {
        try {
            if (KvEventSettings.parseEndpoint(value).isEmpty()) {
                throw new IllegalArgumentException();
            }
        } catch (IllegalArgumentException e) {
            throw new CliException(ExitCodes.USAGE, "invalid " + option + " '" + value + "': allowed is tcp://host:port, ipc://path or inproc://name");
        }
    }

    /** Asks the replay endpoint for the batches from --from (a DEALER, as llm-d asks), printing them until the end marker. */
    private void replay(ZContext context, PrintWriter out) {
        ZMQ.Socket dealer = context.createSocket(SocketType.DEALER);
        dealer.setLinger(0);
        dealer.setReceiveTimeOut(10_000);
        dealer.connect(replayEndpoint);
        dealer.sendMore(new byte[0]);
        dealer.send(ByteBuffer.allocate(8).putLong(from).array());
        while (!done()) {
            ZMsg answer = ZMsg.recvMsg(dealer);
            if (answer == null) {
                throw new CliException(ExitCodes.UNAVAILABLE, "the replay endpoint " + replayEndpoint + " did not answer within 10 s");
            }
            if (answer.size() > 0 && answer.peekFirst().size() == 0) {
                answer.pop();
            }
            if (answer.size() != 3) {
                throw new CliException(ExitCodes.FAILED, "the replay endpoint " + replayEndpoint + " answered " + answer.size()
                        + " frames; expected topic, sequence, payload");
            }
            String topicOf = answer.pop().getString(StandardCharsets.UTF_8);
            byte[] sequence = answer.pop().getData();
            byte[] payload = answer.pop().getData();
            if (sequence.length == 8 && ByteBuffer.wrap(sequence).getLong() == -1) {
                return;
            }
            print(out, topicOf, sequence, payload);
        }
    }

    private void print(PrintWriter out, String topicOf, byte[] sequence, byte[] payload) {
        String seq = sequence.length == 8 ? Long.toUnsignedString(ByteBuffer.wrap(sequence).getLong()) : "?";
        KvEventDecoder.Batch batch;
        try {
            batch = KvEventDecoder.decode(payload);
        } catch (IOException e) {
            spec.commandLine().getErr().println("batch " + seq + " of topic " + topicOf + " is unreadable: " + e.getMessage());
            return;
        }
        for (Map<String, Object> event : batch.events()) {
            if (done()) {
                return;
            }
            if (output.json()) {
                Map<String, Object> line = new LinkedHashMap<>();
                line.put("seq", Long.parseUnsignedLong(seq.equals("?") ? "0" : seq));
                line.put("topic", topicOf);
                line.put("ts", batch.ts());
                line.putAll(event);
                out.println(OutputMixin.toJson(line).replaceAll("\\s*\\n\\s*", " "));
            } else {
                StringBuilder text = new StringBuilder().append("seq=").append(seq).append(" topic=").append(topicOf).append(' ')
                        .append(event.get("type"));
                event.forEach((name, value) -> {
                    if (!name.equals("type") && value != null) {
                        text.append(' ').append(name).append('=').append(format(name, value));
                    }
                });
                out.println(text);
            }
            printed++;
        }
        out.flush();
    }

    private static String format(String name, Object value) {
        if (name.equals("token_ids") && value instanceof List<?> list) {
            return list.size() + " tokens";
        }
        if (value instanceof List<?> list) {
            StringBuilder b = new StringBuilder("[");
            for (Object e : list) {
                b.append(b.length() > 1 ? "," : "").append(e instanceof BigInteger || e instanceof Long ? e.toString() : String.valueOf(e));
            }
            return b.append(']').toString();
        }
        return String.valueOf(value);
    }
}
