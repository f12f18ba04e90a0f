package jrelay;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A small, strict JSON (RFC 8259) reader and a writer for the few shapes the relay emits.
 * Objects become LinkedHashMap (a repeated name is an error), arrays ArrayList, strings String,
 * numbers Num (the literal text, and whether it is an integer literal: no fraction, no exponent),
 * true/false Boolean, null the NULL marker (so that a missing name and a null value differ).
 */
final class Json {
    private Json() {}

    static final Object NULL = new Object() {
        @Override public String toString() { return "null"; }
    };

    /** A JSON number as written: integer is true only for -?(0|[1-9][0-9]*). */
    static final class Num {
        final String text;
        final boolean integer;
        Num(String text, boolean integer) { this.text = text; this.integer = integer; }
        @Override public String toString() { return text; }
    }

    static final class ParseError extends Exception {
        private static final long serialVersionUID = 1L;
        ParseError(String message) { super(message, null, false, false); }
    }

    private static final int MAX_DEPTH = 64;

    static Object parse(String text) throws ParseError {
        Parser p = new Parser(text);
        p.ws();
        Object v = p.value(0);
        p.ws();
        if (p.i != text.length()) throw p.err("trailing characters after the JSON value");
        return v;
    }

    private static final class Parser {
        final String s;
        final int n;
        int i;

        Parser(String s) { this.s = s; this.n = s.length(); }

        ParseError err(String what) { return new ParseError(what + " at offset " + i); }

        void ws() {
            while (i < n) {
                char c = s.charAt(i);
                if (c == ' ' || c == '\t' || c == '\n' || c == '\r') i++; else break;
            }
        }

        Object value(int depth) throws ParseError {
            if (depth > MAX_DEPTH) throw err("nesting too deep");
            if (i >= n) throw err("unexpected end of input");
            char c = s.charAt(i);
            switch (c) {
                case '{': return object(depth + 1);
                case '[': return array(depth + 1);
                case '"': return string();
                case 't': literal("true"); return Boolean.TRUE;
                case 'f': literal("false"); return Boolean.FALSE;
                case 'n': literal("null"); return NULL;
                default:
                    if (c == '-' || (c >= '0' && c <= '9')) return number();
                    throw err("unexpected character");
            }
        }

        void literal(String word) throws ParseError {
            if (!s.startsWith(word, i)) throw err("invalid literal");
            i += word.length();
        }

        Map<String, Object> object(int depth) throws ParseError {
            i++; // '{'
            Map<String, Object> m = new LinkedHashMap<>();
            ws();
            if (i < n && s.charAt(i) == '}') { i++; return m; }
            while (true) {
                ws();
                if (i >= n || s.charAt(i) != '"') throw err("expected a string name");
                String key = string();
                ws();
                if (i >= n || s.charAt(i) != ':') throw err("expected ':'");
                i++;
                ws();
                Object v = value(depth);
                if (m.containsKey(key)) throw err("repeated name \"" + key + "\"");
                m.put(key, v);
                ws();
                if (i >= n) throw err("unexpected end of input in an object");
                char c = s.charAt(i++);
                if (c == '}') return m;
                if (c != ',') { i--; throw err("expected ',' or '}'"); }
            }
        }

        List<Object> array(int depth) throws ParseError {
            i++; // '['
            List<Object> a = new ArrayList<>();
            ws();
            if (i < n && s.charAt(i) == ']') { i++; return a; }
            while (true) {
                ws();
                a.add(value(depth));
                ws();
                if (i >= n) throw err("unexpected end of input in an array");
                char c = s.charAt(i++);
                if (c == ']') return a;
                if (c != ',') { i--; throw err("expected ',' or ']'"); }
            }
        }

        String string() throws ParseError {
            i++; // opening quote
            StringBuilder b = null;
            int start = i;
            while (true) {
                if (i >= n) throw err("unterminated string");
                char c = s.charAt(i);
                if (c == '"') {
                    String out = b == null ? s.substring(start, i) : b.append(s, start, i).toString();
                    i++;
                    return out;
                }
                if (c < 0x20) throw err("control character in a string");
                if (c != '\\') { i++; continue; }
                if (b == null) b = new StringBuilder();
                b.append(s, start, i);
                i++;
                if (i >= n) throw err("unterminated escape");
                char e = s.charAt(i++);
                switch (e) {
                    case '"': b.append('"'); break;
                    case '\\': b.append('\\'); break;
                    case '/': b.append('/'); break;
                    case 'b': b.append('\b'); break;
                    case 'f': b.append('\f'); break;
                    case 'n': b.append('\n'); break;
                    case 'r': b.append('\r'); break;
                    case 't': b.append('\t'); break;
                    case 'u': {
                        if (i + 4 > n) throw err("short \\u escape");
                        int v = 0;
                        for (int k = 0; k < 4; k++) {
                            int d = Character.digit(s.charAt(i + k), 16);
                            if (d < 0 || s.charAt(i + k) > 'f') throw err("bad \\u escape");
                            v = v * 16 + d;
                        }
                        i += 4;
                        b.append((char) v);
                        break;
                    }
                    default: i--; throw err("bad escape");
                }
                start = i;
            }
        }

        Num number() throws ParseError {
            int start = i;
            boolean integer = true;
            if (s.charAt(i) == '-') i++;
            if (i >= n) throw err("bad number");
            char c = s.charAt(i);
            if (c == '0') {
                i++;
            } else if (c >= '1' && c <= '9') {
                while (i < n && isDigit(s.charAt(i))) i++;
            } else {
                throw err("bad number");
            }
            if (i < n && s.charAt(i) == '.') {
                integer = false;
                i++;
                if (i >= n || !isDigit(s.charAt(i))) throw err("bad fraction");
                while (i < n && isDigit(s.charAt(i))) i++;
            }
            if (i < n && (s.charAt(i) == 'e' || s.charAt(i) == 'E')) {
                integer = false;
                i++;
                if (i < n && (s.charAt(i) == '+' || s.charAt(i) == '-')) i++;
                if (i >= n || !isDigit(s.charAt(i))) throw err("bad exponent");
                while (i < n && isDigit(s.charAt(i))) i++;
            }
            return new Num(s.substring(start, i), integer);
        }

        static boolean isDigit(char c) { return c >= '0' && c <= '9'; }
    }

    // ---- writing -------------------------------------------------------------------------

    /** Appends s as a JSON string; everything outside printable ASCII is \\u-escaped, so the output is ASCII. */
    static void quote(StringBuilder b, String s) {
        b.append('"');
        for (int k = 0; k < s.length(); k++) {
            char c = s.charAt(k);
            switch (c) {
                case '"': b.append("\\\""); break;
                case '\\': b.append("\\\\"); break;
                case '\n': b.append("\\n"); break;
                case '\r': b.append("\\r"); break;
                case '\t': b.append("\\t"); break;
                default:
                    if (c < 0x20 || c > 0x7e) {
                        b.append("\\u");
                        String h = Integer.toHexString(c);
                        for (int p = h.length(); p < 4; p++) b.append('0');
                        b.append(h);
                    } else {
                        b.append(c);
                    }
            }
        }
        b.append('"');
    }

    /**
     * An object from name/value pairs, in order. A value is a String (written quoted), a Num
     * (written as its literal), a Boolean, or null (the pair is left out).
     */
    static String object(Object... pairs) {
        StringBuilder b = new StringBuilder(96).append('{');
        boolean first = true;
        for (int k = 0; k < pairs.length; k += 2) {
            Object v = pairs[k + 1];
            if (v == null) continue;
            if (!first) b.append(',');
            first = false;
            quote(b, (String) pairs[k]);
            b.append(':');
            if (v instanceof String) quote(b, (String) v);
            else b.append(v.toString()); // Num, Boolean
        }
        return b.append('}').toString();
    }
}
