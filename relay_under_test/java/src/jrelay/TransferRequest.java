package jrelay;

import java.math.BigInteger;
import java.util.Map;

/** A well-formed channel request: {"guid": str, "from": str, "to": str, "amount": int}. */
final class TransferRequest {
    final String guid;
    final String from;
    final String to;
    final BigInteger amount;

    private TransferRequest(String guid, String from, String to, BigInteger amount) {
        this.guid = guid;
        this.from = from;
        this.to = to;
        this.amount = amount;
    }

    static final class Invalid extends Exception {
        private static final long serialVersionUID = 1L;
        final String guid; // the request's guid when it was a string, for the answer
        Invalid(String message, String guid) {
            super(message, null, false, false);
            this.guid = guid;
        }
    }

    /** Parses and validates a body; fields beyond the four are ignored. */
    static TransferRequest parse(String body) throws Invalid {
        Object v;
        try {
            v = Json.parse(body);
        } catch (Json.ParseError e) {
            throw new Invalid("not JSON: " + e.getMessage(), null);
        }
        if (!(v instanceof Map)) throw new Invalid("the body is not a JSON object", null);
        Map<?, ?> m = (Map<?, ?>) v;
        Object g = m.get("guid");
        String guidText = g instanceof String ? (String) g : null;
        String guid = string(m, "guid", guidText);
        if (!validGuid(guid)) throw new Invalid("guid must be 1 to 64 characters of A-Z a-z 0-9 - _", guidText);
        String from = string(m, "from", guidText);
        String to = string(m, "to", guidText);
        if (!m.containsKey("amount")) throw new Invalid("missing field: amount", guidText);
        Object a = m.get("amount");
        if (!(a instanceof Json.Num) || !((Json.Num) a).integer) {
            throw new Invalid("amount must be an integer", guidText);
        }
        BigInteger amount = new BigInteger(((Json.Num) a).text);
        if (amount.signum() <= 0) throw new Invalid("amount must be greater than 0", guidText);
        return new TransferRequest(guid, from, to, amount);
    }

    private static String string(Map<?, ?> m, String name, String guid) throws Invalid {
        if (!m.containsKey(name)) throw new Invalid("missing field: " + name, guid);
        Object v = m.get(name);
        if (!(v instanceof String)) throw new Invalid(name + " must be a string", guid);
        return (String) v;
    }

    static boolean validGuid(String g) {
        int n = g.length();
        if (n < 1 || n > 64) return false;
        for (int k = 0; k < n; k++) {
            char c = g.charAt(k);
            boolean ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
            if (!ok) return false;
        }
        return true;
    }

    /** Same GUID and same from/to/amount. */
    boolean sameAs(TransferRequest o) {
        return guid.equals(o.guid) && from.equals(o.from) && to.equals(o.to) && amount.equals(o.amount);
    }

    /** The body POSTed to the account system: the four fields only. */
    String accountBody() {
        return Json.object("guid", guid, "from", from, "to", to, "amount", new Json.Num(amount.toString(), true));
    }
}
