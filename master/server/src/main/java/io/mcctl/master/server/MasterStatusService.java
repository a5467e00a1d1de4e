package io.mcctl.master.server;

import io.grpc.ServerInterceptors;
import io.grpc.ServerServiceDefinition;
import io.grpc.stub.ServerCalls;
import io.mcctl.master.proto.v1.GetMasterStatusResponse;
import io.mcctl.master.proto.v1.MasterServiceGrpc;
import io.mcctl.master.security.MasterSecurity;
import java.util.function.Supplier;

/**
 * {@code GetMasterStatus} on its own, so that a master answers it in every role (a standby refuses the page calls
 * but says where it is in the log) and apart from the page service's handlers.
 */
public final class MasterStatusService {

    private MasterStatusService() {
    }

    /** The RPC answered from {@code status}, behind access control. */
    public static ServerServiceDefinition definition(MasterSecurity security, Supplier<GetMasterStatusResponse> status) {
        ServerServiceDefinition bare = ServerServiceDefinition.builder(MasterServiceGrpc.SERVICE_NAME)
                .addMethod(MasterServiceGrpc.getGetMasterStatusMethod(), ServerCalls.asyncUnaryCall((request, observer) -> {
                    observer.onNext(status.get());
                    observer.onCompleted();
                }))
                .build();
        return ServerInterceptors.intercept(bare, security.interceptor());
    }
}
