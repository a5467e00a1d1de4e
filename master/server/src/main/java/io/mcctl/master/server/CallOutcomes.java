package io.mcctl.master.server;

import io.grpc.stub.StreamObserver;
import io.mcctl.master.proto.v1.ErrorCode;
import io.mcctl.master.proto.v1.KeyError;
import io.mcctl.master.protocol.BatchLimits;
import io.mcctl.master.protocol.WireErrors;
import io.mcctl.master.service.Result;

/**
 * What every RPC of the master does alike: refuse a batch whose lists disagree before anything changes, map a page
 * service {@link Result} to the call's status or to one key's {@link KeyError}, and send a unary answer.
 */
final class CallOutcomes {

    private CallOutcomes() {
    }

    private static final KeyError OK = KeyError.getDefaultInstance();

    static KeyError keyError(Result<?> result) {
        return result.isOk() ? OK : KeyError.newBuilder().setError(result.error()).setMessage(result.message())
                .setRetryAfterMs(result.retryAfterMillis()).build();
    }

    static <T> T orThrow(Result<T> result) {
        if (!result.isOk()) {
            throw WireErrors.exception(result.error(), result.message());
        }
        return result.value();
    }

    static void checkBatch(int keys, int tenants, String otherName, int others) {
        if (keys > BatchLimits.MAX_BATCH) {
            throw WireErrors.exception(ErrorCode.INVALID_PARAMS, "batch of " + keys + " keys is larger than " + BatchLimits.MAX_BATCH);
        }
        if (tenants != keys) {
            throw WireErrors.exception(ErrorCode.INVALID_PARAMS, "batch has " + keys + " keys but " + tenants + " tenant_ids");
        }
        if (otherName != null && others != keys) {
            throw WireErrors.exception(ErrorCode.INVALID_PARAMS, "batch has " + keys + " keys but " + others + " " + otherName);
        }
    }

    static <T> void reply(StreamObserver<T> observer, T response) {
        observer.onNext(response);
        observer.onCompleted();
    }
}
