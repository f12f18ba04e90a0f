package jrelay;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.ConnectException;
import java.net.HttpURLConnection;
import java.net.NoRouteToHostException;
import java.net.Proxy;
import java.net.URL;
import java.net.UnknownHostException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Calls to the account system (through its proxy), with one deadline of ACCOUNT_TIMEOUT_MS per
 * call covering connect, send and the whole answer. Classification of a transfer call:
 * an HTTP answer carrying a code is definite (DONE); a connection that could not be made is
 * FAILED; anything else after the connection was made (time-out, reset, truncated or unreadable
 * answer) is UNKNOWN.
 */
final class Account {
    static final int MAX_ANSWER = 1 << 20;

    enum Kind { DONE, FAILED, UNKNOWN }

    static final class Outcome {
        final Kind kind;
        final String code;    // the account code for DONE
        final String message; // the account's message for DONE, else why
        Outcome(Kind kind, String code, String message) { this.kind = kind; this.code = code; this.message = message; }
    }

    /** Result of a query: found (code set), not found, or no usable answer (code null, found false, failed true). */
    static final class Query {
        final boolean found, failed;
        final String code;
        Query(boolean found, boolean failed, String code) { this.found = found; this.failed = failed; this.code = code; }
    }

    private static final ScheduledThreadPoolExecutor WATCHDOG = new ScheduledThreadPoolExecutor(1, r -> {
        Thread t = new Thread(r, "account-deadline");
        t.setDaemon(true);
        return t;
    });
    static {
        WATCHDOG.setRemoveOnCancelPolicy(true);
    }

    private final String base;
    private final int timeoutMs;

    Account(String baseUrl, int timeoutMs) {
        String b = baseUrl;
        while (b.endsWith("/")) b = b.substring(0, b.length() - 1);
        this.base = b;
        this.timeoutMs = Math.max(1, timeoutMs);
    }

    /** A raw HTTP exchange: status and body, or the stage it broke at. */
    private static final class Exchange {
        boolean connected;    // the TCP connection was made
        boolean refused;      // the connection could not be made
        int status = -1;
        byte[] body;
        String error;
    }

    private Exchange exchange(String method, String path, byte[] payload) {
        Exchange x = new Exchange();
        HttpURLConnection c;
        try {
            c = (HttpURLConnection) new URL(base + path).openConnection(Proxy.NO_PROXY);
            c.setRequestMethod(method);
        } catch (IOException | RuntimeException e) { // a malformed ACCOUNT_URL: nothing can be sent
            x.refused = true;
            x.error = "bad ACCOUNT_URL: " + e;
            return x;
        }
        c.setConnectTimeout(timeoutMs);
        c.setReadTimeout(timeoutMs);
        c.setUseCaches(false);
        c.setInstanceFollowRedirects(false);
        c.setRequestProperty("Accept", "application/json");
        if (payload != null) {
            c.setDoOutput(true);
            c.setFixedLengthStreamingMode(payload.length); // streaming: HttpURLConnection never resends it
            c.setRequestProperty("Content-Type", "application/json");
        }
        AtomicBoolean expired = new AtomicBoolean();
        ScheduledFuture<?> dog = WATCHDOG.schedule(() -> {
            expired.set(true);
            c.disconnect();
        }, timeoutMs, TimeUnit.MILLISECONDS);
        try {
            try {
                c.connect();
            } catch (ConnectException | NoRouteToHostException | UnknownHostException e) {
                if (!expired.get()) {
                    x.refused = true;
                    x.error = "connection not made: " + e.getMessage();
                    return x;
                }
                x.error = "deadline reached while connecting";
                return x;
            } catch (IOException | RuntimeException e) {
                x.error = "connect: " + e; // a connect time-out included: in doubt
                return x;
            }
            x.connected = true;
            try {
                if (payload != null) {
                    try (OutputStream os = c.getOutputStream()) {
                        os.write(payload);
                    }
                }
                x.status = c.getResponseCode();
                InputStream in = x.status >= 400 ? c.getErrorStream() : c.getInputStream();
                x.body = in == null ? new byte[0] : readAll(in, MAX_ANSWER);
                if (expired.get()) { // the watchdog fired: the answer may be cut short
                    x.status = -1;
                    x.error = "deadline reached";
                }
            } catch (IOException | RuntimeException e) {
                x.status = -1;
                x.error = (expired.get() ? "no answer within " + timeoutMs + " ms: " : "") + e;
            }
            return x;
        } finally {
            dog.cancel(false);
            c.disconnect();
        }
    }

    /** POST /transfer: one call, never repeated. */
    Outcome transfer(TransferRequest r) {
        Exchange x = exchange("POST", "/transfer", r.accountBody().getBytes(StandardCharsets.UTF_8));
        if (x.refused) return new Outcome(Kind.FAILED, null, x.error);
        if (x.status < 0) return new Outcome(Kind.UNKNOWN, null, x.error);
        Map<?, ?> m = object(x.body);
        if (m != null && m.get("code") instanceof String && !((String) m.get("code")).isEmpty()) {
            Object msg = m.get("message");
            return new Outcome(Kind.DONE, (String) m.get("code"), msg instanceof String ? (String) msg : null);
        }
        return new Outcome(Kind.UNKNOWN, null, "HTTP " + x.status + " without a usable code");
    }

    /** GET /transfer/{guid}: the outcome of the first processing, if any. */
    Query query(String guid) {
        Exchange x = exchange("GET", "/transfer/" + guid, null);
        if (x.status < 0) return new Query(false, true, null);
        Map<?, ?> m = object(x.body);
        if (m == null) return new Query(false, true, null);
        Object g = m.get("guid");
        if (g != null && !guid.equals(g)) return new Query(false, true, null);
        Object found = m.get("found");
        if (x.status == 200 && Boolean.TRUE.equals(found) && m.get("code") instanceof String) {
            return new Query(true, false, (String) m.get("code"));
        }
        if (x.status == 404 && Boolean.FALSE.equals(found)) return new Query(false, false, null);
        return new Query(false, true, null);
    }

    private static Map<?, ?> object(byte[] body) {
        try {
            Object v = Json.parse(utf8(body));
            return v instanceof Map ? (Map<?, ?>) v : null;
        } catch (Json.ParseError | CharacterCodingException e) {
            return null;
        }
    }

    static String utf8(byte[] b) throws CharacterCodingException {
        return StandardCharsets.UTF_8.newDecoder()
                .onMalformedInput(CodingErrorAction.REPORT)
                .onUnmappableCharacter(CodingErrorAction.REPORT)
                .decode(ByteBuffer.wrap(b)).toString();
    }

    static byte[] readAll(InputStream in, int max) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream(256);
        byte[] buf = new byte[4096];
        int n;
        while ((n = in.read(buf)) >= 0) {
            out.write(buf, 0, n);
            if (out.size() > max) throw new IOException("more than " + max + " bytes");
        }
        return out.toByteArray();
    }
}
