"""gRPC stubs generated from master/protocol/src/main/proto/mooncake/master/v1/master.proto by regen-stubs; do not edit."""
