// Admits a Spark Connect call only from a loopback peer that presents the
// server's token. Spark 3.5's Connect server has no bind-address or token
// setting of its own (both came in Spark 4.0), but it loads interceptors named
// in spark.connect.grpc.interceptor.classes. The token is read once from the
// server process's environment (HUDI_CONNECT_SERVER_TOKEN); clients send it as
// the "x-hudi-connect-token" header (sc://host:port/;x-hudi-connect-token=...).
package hudiconnect;

import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.security.MessageDigest;
import java.nio.charset.StandardCharsets;

import org.sparkproject.connect.grpc.Grpc;
import org.sparkproject.connect.grpc.Metadata;
import org.sparkproject.connect.grpc.ServerCall;
import org.sparkproject.connect.grpc.ServerCallHandler;
import org.sparkproject.connect.grpc.ServerInterceptor;
import org.sparkproject.connect.grpc.Status;

public final class LoopbackTokenInterceptor implements ServerInterceptor {
  static final Metadata.Key<String> TOKEN_HEADER =
      Metadata.Key.of("x-hudi-connect-token", Metadata.ASCII_STRING_MARSHALLER);

  private final byte[] expected;

  public LoopbackTokenInterceptor() {
    String token = System.getenv("HUDI_CONNECT_SERVER_TOKEN");
    if (token == null || token.isEmpty()) {
      throw new IllegalStateException("HUDI_CONNECT_SERVER_TOKEN is not set for the Connect server");
    }
    expected = token.getBytes(StandardCharsets.US_ASCII);
  }

  @Override
  public <ReqT, RespT> ServerCall.Listener<ReqT> interceptCall(
      ServerCall<ReqT, RespT> call, Metadata headers, ServerCallHandler<ReqT, RespT> next) {
    SocketAddress peer = call.getAttributes().get(Grpc.TRANSPORT_ATTR_REMOTE_ADDR);
    if (!(peer instanceof InetSocketAddress) || !((InetSocketAddress) peer).getAddress().isLoopbackAddress()) {
      call.close(Status.PERMISSION_DENIED.withDescription("only loopback clients are served"), new Metadata());
      return new ServerCall.Listener<ReqT>() {};
    }
    String presented = headers.get(TOKEN_HEADER);
    if (presented == null
        || !MessageDigest.isEqual(expected, presented.getBytes(StandardCharsets.US_ASCII))) {
      call.close(Status.UNAUTHENTICATED.withDescription("missing or wrong x-hudi-connect-token"), new Metadata());
      return new ServerCall.Listener<ReqT>() {};
    }
    return next.startCall(call, headers);
  }
}
