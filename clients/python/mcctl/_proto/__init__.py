"""gRPC stubs generated from master/src/main/proto/mooncake/master/v1/master.proto by regen-stubs; do not edit."""
