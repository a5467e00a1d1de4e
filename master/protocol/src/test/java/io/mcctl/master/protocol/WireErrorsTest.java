package io.mcctl.master.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.mcctl.master.proto.v1.ErrorCode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

@Timeout(60)
class WireErrorsTest {

    @ParameterizedTest
    @EnumSource(value = ErrorCode.class, names = {"OK", "UNRECOGNIZED"}, mode = EnumSource.Mode.EXCLUDE)
    void every_code_goes_out_and_comes_back_with_its_message(ErrorCode code) {
        StatusRuntimeException e = WireErrors.exception(code, "what happened: details");
        assertEquals(WireErrors.statusOf(code), e.getStatus().getCode());
        assertEquals(code.name(), e.getTrailers().get(WireErrors.ERROR_CODE_KEY));
        assertEquals(code, WireErrors.codeOf(e));
        assertEquals("what happened: details", WireErrors.messageOf(e), "only the NAME: prefix is dropped");
    }

    @Test
    void a_status_without_the_trailer_maps_to_the_nearest_code() {
        assertEquals(ErrorCode.OBJECT_NOT_FOUND, WireErrors.codeOf(Status.NOT_FOUND.asRuntimeException()));
        assertEquals(ErrorCode.INVALID_PARAMS, WireErrors.codeOf(Status.INVALID_ARGUMENT.asRuntimeException()));
        assertEquals(ErrorCode.NO_AVAILABLE_HANDLE, WireErrors.codeOf(Status.RESOURCE_EXHAUSTED.asRuntimeException()));
        assertEquals(ErrorCode.REPLICA_IS_NOT_READY, WireErrors.codeOf(Status.FAILED_PRECONDITION.asRuntimeException()));
        assertEquals(ErrorCode.OBJECT_ALREADY_EXISTS, WireErrors.codeOf(Status.ALREADY_EXISTS.asRuntimeException()));
        assertEquals(ErrorCode.INTERNAL_ERROR, WireErrors.codeOf(Status.UNKNOWN.asRuntimeException()));
    }

    @Test
    void an_unknown_name_in_the_trailer_falls_back_to_the_status() {
        Metadata trailers = new Metadata();
        trailers.put(WireErrors.ERROR_CODE_KEY, "SOME_FUTURE_CODE");
        assertEquals(ErrorCode.OBJECT_NOT_FOUND, WireErrors.codeOf(Status.NOT_FOUND.asRuntimeException(trailers)));
    }

    @Test
    void a_description_without_a_code_prefix_is_kept_whole() {
        assertEquals("plain words: more", WireErrors.messageOf(Status.INTERNAL.withDescription("plain words: more").asRuntimeException()));
        assertEquals("INTERNAL", WireErrors.messageOf(Status.INTERNAL.asRuntimeException()));
    }
}
