package jrelay;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.sql.SQLException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/** The relay's HTTP API: GET /health and POST /transfer. */
final class Serve {
    static final int MAX_BODY = 1 << 20;
    static final int THREADS = 64;

    private final Ledger ledger;
    private final Relay relay;

    Serve(Ledger ledger, Relay relay) {
        this.ledger = ledger;
        this.relay = relay;
    }

    void start(String host, int port) throws IOException {
        HttpServer server = HttpServer.create(new InetSocketAddress(host, port), 256);
        ThreadPoolExecutor pool = new ThreadPoolExecutor(THREADS, THREADS, 30, TimeUnit.SECONDS,
                new LinkedBlockingQueue<>());
        pool.allowCoreThreadTimeOut(true);
        server.setExecutor(pool);
        server.createContext("/", this::handle);
        server.start();
    }

    private void handle(HttpExchange ex) throws IOException {
        try {
            String path = ex.getRequestURI().getPath();
            String method = ex.getRequestMethod();
            if ("/health".equals(path)) {
                if ("GET".equals(method) || "HEAD".equals(method)) send(ex, 200, Json.object("status", "ok"));
                else send(ex, 405, Json.object("code", "E405", "message", "method not allowed"));
            } else if ("/transfer".equals(path)) {
                if ("POST".equals(method)) transfer(ex);
                else send(ex, 405, Json.object("code", "E405", "message", "method not allowed"));
            } else {
                send(ex, 404, Json.object("code", "E404", "message", "not found"));
            }
        } catch (Throwable t) {
            System.err.println("relay: " + t);
            try {
                send(ex, 500, Json.object("code", "E999", "message", "internal error"));
            } catch (Throwable ignored) {
                // headers already sent or the channel went away
            }
        } finally {
            ex.close();
        }
    }

    private void transfer(HttpExchange ex) throws IOException {
        byte[] raw;
        try (InputStream in = ex.getRequestBody()) {
            raw = Account.readAll(in, MAX_BODY);
        } catch (IOException e) {
            send(ex, 400, Json.object("code", "E400", "message", "unreadable body: " + e.getMessage()));
            return;
        }
        String body;
        TransferRequest req;
        try {
            body = Account.utf8(raw);
            req = TransferRequest.parse(body);
        } catch (CharacterCodingException e) {
            send(ex, 400, Json.object("code", "E400", "message", "the body is not UTF-8"));
            return;
        } catch (TransferRequest.Invalid e) {
            send(ex, 400, Json.object("guid", e.guid, "code", "E400", "message", e.getMessage()));
            return;
        }
        String answer;
        try {
            answer = relay.handle(req, body);
        } catch (SQLException e) {
            System.err.println("relay: ledger error for " + req.guid + ": " + e);
            send(ex, 503, Json.object("guid", req.guid, "code", "E999", "message", "ledger unavailable"));
            return;
        }
        send(ex, 200, answer);
    }

    static void send(HttpExchange ex, int status, String body) throws IOException {
        byte[] b = body.getBytes(StandardCharsets.UTF_8);
        ex.getResponseHeaders().set("Content-Type", "application/json");
        if ("HEAD".equals(ex.getRequestMethod())) {
            ex.sendResponseHeaders(status, -1);
            return;
        }
        ex.sendResponseHeaders(status, b.length);
        try (OutputStream os = ex.getResponseBody()) {
            os.write(b);
        }
    }
}
