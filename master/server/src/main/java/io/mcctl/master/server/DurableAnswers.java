package io.mcctl.master.server;

import static io.mcctl.master.server.CallOutcomes.reply;

import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;
import io.mcctl.master.proto.v1.ErrorCode;
import io.mcctl.master.protocol.WireErrors;
import io.mcctl.master.service.AnswerBarrier;
import io.mcctl.master.service.PageService;
import io.mcctl.master.service.Result;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.Consumer;
import java.util.function.IntFunction;
import java.util.function.Supplier;

/**
 * When an answer may go out: a mutation's once its changes are durable, a lookup's once the log holds the commits it met.
 * The thread serving a call never waits; the answer is sent from the call's transport loop, or a reply thread.
 *
 * <p>Thread-safe: {@code loops} is volatile, and nothing here takes a lock.
 */
final class DurableAnswers {

    private final MasterGrpcService.Durability durability;
    /**
     * The transport loops calls are served on: an answer completed after a group commit goes back to its call's loop
     * ({@link TransportLoops#currentLoopOr}); null (a server on gRPC's own loops) sends it from a reply thread.
     */
    private volatile TransportLoops loops;

    /** Sends the answers of mutating calls once their changes are durable, where no transport loop takes them. */
    private final ExecutorService replyExecutor = Executors.newFixedThreadPool(2, r -> {
        Thread thread = new Thread(r, "mcctl-master-reply");
        thread.setDaemon(true);
        return thread;
    });

    DurableAnswers(MasterGrpcService.Durability durability) {
        this.durability = durability;
    }

    /** Answers calls completed on other threads on {@code loops}, the ones the server runs them on. */
    void answerOn(TransportLoops loops) {
        this.loops = loops;
    }

    /**
     * Answers once the changes this call made are on disk. The transport thread does not wait: the log's
     * writer completes the answer after its fsync, one fsync for every call waiting at that moment.
     */
    <T> void replyWhenDurable(StreamObserver<T> observer, T response) {
        replyWhenDurable(observer, response, AnswerBarrier.EVERYTHING);
    }

    /** {@link #replyWhenDurable(StreamObserver, Object)} once the changes up to {@code sequence} are on disk (0: at once). */
    <T> void replyWhenDurable(StreamObserver<T> observer, T response, long sequence) {
        whenDurable(sequence, () -> reply(observer, response), observer::onError);
    }

    /**
     * Runs {@code answer} once every change up to {@code sequence} is on disk ({@link AnswerBarrier#EVERYTHING}: every
     * change made so far; 0: at once), or {@code fail} with the status that says the outcome is unknown when the log
     * failed. Unary calls and the stream answer mutations through this alone.
     */
    void whenDurable(long sequence, Runnable answer, Consumer<StatusRuntimeException> fail) {
        if (sequence == 0) {
            answer.run();
            return;
        }
        CompletableFuture<Void> durable = durability.whenDurable(sequence);
        if (durable.isDone() && !durable.isCompletedExceptionally()) {
            answer.run();
            return;
        }
        // Answers are encoded and sent by the call's transport loop (or a reply thread), so the log's writer goes straight
        // back to its next fsync; asked here, on the thread serving the call.
        durable.whenCompleteAsync((ignored, failure) -> {
            if (failure != null) {
                Throwable cause = failure instanceof CompletionException && failure.getCause() != null ? failure.getCause() : failure;
                fail.accept(WireErrors.changesRefused("the outcome is unknown: the change may not be durable (" + cause.getMessage()
                        + "); the master accepts no changes until it is restarted, then check with mcctl stat"));
            } else {
                answer.run();
            }
        }, answering());
    }

    /**
     * Runs {@code then} once every change up to {@code sequence} is on disk or the log has failed (0: at once), on the
     * call's transport loop or a reply thread: a lookup that met mappings whose commits the log did not hold yet looks
     * those keys up again then, and finds each one, or a miss if the log failed.
     */
    void whenLogged(long sequence, Runnable then) {
        if (sequence == 0) {
            then.run();
            return;
        }
        CompletableFuture<Void> durable = durability.whenDurable(sequence);
        if (durable.isDone()) {
            then.run();
            return;
        }
        durable.whenCompleteAsync((ignored, failure) -> then.run(), answering());
    }

    /** Where an answer completed by the log's writer is sent from: the serving call's transport loop, else a reply thread. */
    private Executor answering() {
        TransportLoops serving = loops;
        return serving == null ? replyExecutor : serving.currentLoopOr(replyExecutor);
    }

    /**
     * Answers a lookup with {@code answer}: at once when every mapping it met is durable (nearly always), else once the
     * log holds what {@code wait} noted, or failed ({@link #whenLogged}). A failure of the answer there closes the call.
     */
    <T> void answerLookup(StreamObserver<T> observer, AnswerBarrier wait, Supplier<T> answer) {
        if (wait.sequence() == 0) {
            reply(observer, answer.get());
            return;
        }
        whenLogged(wait.sequence(), () -> {
            T answered;
            try {
                answered = answer.get();
            } catch (StatusRuntimeException e) {
                observer.onError(e);
                return;
            } catch (RuntimeException e) {
                observer.onError(WireErrors.exception(ErrorCode.INTERNAL_ERROR, "lookup failed: " + e));
                return;
            }
            reply(observer, answered);
        });
    }

    /** {@code found} with each answer that waited for the log ({@link PageService#waitsForLog}) replaced by {@code again} of its index. */
    static <T> List<Result<T>> lookAgain(List<Result<T>> found, IntFunction<Result<T>> again) {
        List<Result<T>> settled = new ArrayList<>(found);
        for (int i = 0; i < settled.size(); i++) {
            if (PageService.waitsForLog(settled.get(i))) {
                settled.set(i, again.apply(i));
            }
        }
        return settled;
    }
}
