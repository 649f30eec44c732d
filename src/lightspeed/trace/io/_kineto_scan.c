/* lightspeed.trace.io._kineto_scan: Kineto events into C columns, without a Python object per event.
 *
 * scan(chunk) reads one chunk of a trace's events (the bytes of a JSON array of whole events, as
 * kineto_stream cuts them) into one row per event: a C struct of the fields the table builder
 * reads (see Row below), held in a buffer that Python wraps with numpy.frombuffer. Names,
 * categories and collective texts are interned in C hash tables; a Python str is made once per
 * distinct string, after the scan. The scan itself runs with the GIL released.
 *
 * It is strict: it accepts only what msgspec accepts for list[kineto_schema.Event], and of that
 * only what it fully handles. Anything else (a type msgspec would reject, an integer outside int64,
 * a duplicated or escaped key, nesting deeper than MAX_DEPTH, damaged or truncated bytes, invalid
 * UTF-8 in a kept string) raises ValueError, and the caller decodes the chunk with msgspec
 * instead, which gives the exact values or the exact error message. A tid or stream written as a
 * string is interned like a name (its text id in the row); Python reads those few as msgspec's
 * path does.
 * Every read is bounds-checked; nothing recurses deeper than MAX_DEPTH.
 * Numbers: integers exact in int64; decimals correctly rounded (exact fast path when the digits
 * fit 2**53 and the power of ten is at most 22; otherwise the span is converted by
 * PyOS_string_to_double, CPython's correctly rounded dtoa, once the GIL is back).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <math.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#define MAX_DEPTH 64
#define NO_ID (-1)

typedef struct {
    double ts, dur, flops;
    int64_t ts_int, tid, stream, correlation, device, in_elements, out_elements, group_size;
    int64_t dims_start, dims_end, types_start, types_end;
    int32_t cat, name, collective, dtype;
    int32_t tid_text, stream_text; /* a tid or stream written as a string: its text id (else -1) */
    int32_t flags;
} Row;

#define TS_IS_INT 1

/* --- growable buffers (malloc: no GIL needed) ----------------------------------------------- */

typedef struct {
    char *data;
    size_t len, cap;
} Buf;

static int buf_reserve(Buf *b, size_t extra) {
    if (extra > SIZE_MAX / 2 - b->len) return -1;
    if (b->len + extra <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + extra) cap *= 2;
    char *data = realloc(b->data, cap);
    if (!data) return -1;
    b->data = data;
    b->cap = cap;
    return 0;
}

static int buf_append(Buf *b, const void *bytes, size_t size) {
    if (buf_reserve(b, size)) return -1;
    if (size) memcpy(b->data + b->len, bytes, size);
    b->len += size;
    return 0;
}

/* --- interning: distinct strings in first-seen order ---------------------------------------- */

typedef struct {
    size_t offset, length;
} Span;

typedef struct {
    int32_t *slots; /* id + 1 (0: empty), open addressing */
    uint64_t *hashes;
    size_t capacity, count;
    Buf arena; /* the strings' bytes */
    Buf spans; /* Span per id */
} Table;

static uint64_t hash_bytes(const char *bytes, size_t size) {
    uint64_t hash = 1469598103934665603ULL ^ size;
    size_t i = 0;
    for (; i + 8 <= size; i += 8) {
        uint64_t word;
        memcpy(&word, bytes + i, 8);
        hash = (hash ^ word) * 1099511628211ULL;
        hash ^= hash >> 29;
    }
    for (; i < size; i++) hash = (hash ^ (unsigned char)bytes[i]) * 1099511628211ULL;
    return hash ^ (hash >> 32);
}

static int table_grow(Table *t) {
    size_t capacity = t->capacity ? t->capacity * 2 : 1024;
    int32_t *slots = calloc(capacity, sizeof(int32_t));
    uint64_t *hashes = calloc(capacity, sizeof(uint64_t));
    if (!slots || !hashes) {
        free(slots);
        free(hashes);
        return -1;
    }
    for (size_t i = 0; i < t->capacity; i++) {
        if (!t->slots[i]) continue;
        size_t j = t->hashes[i] & (capacity - 1);
        while (slots[j]) j = (j + 1) & (capacity - 1);
        slots[j] = t->slots[i];
        hashes[j] = t->hashes[i];
    }
    free(t->slots);
    free(t->hashes);
    t->slots = slots;
    t->hashes = hashes;
    t->capacity = capacity;
    return 0;
}

/* The id of the string (adding it when new); -1 when out of memory. */
static int32_t table_id(Table *t, const char *bytes, size_t size) {
    if ((t->count + 1) * 2 > t->capacity && table_grow(t)) return -1;
    uint64_t hash = hash_bytes(bytes, size);
    size_t j = hash & (t->capacity - 1);
    const Span *spans = (const Span *)t->spans.data;
    while (t->slots[j]) {
        if (t->hashes[j] == hash) {
            const Span *span = &spans[t->slots[j] - 1];
            if (span->length == size && (size == 0 || memcmp(t->arena.data + span->offset, bytes, size) == 0))
                return t->slots[j] - 1;
        }
        j = (j + 1) & (t->capacity - 1);
    }
    if (t->count >= INT32_MAX - 1) return -1;
    Span span = {t->arena.len, size};
    if (buf_append(&t->arena, bytes, size) || buf_append(&t->spans, &span, sizeof span)) return -1;
    t->slots[j] = (int32_t)(t->count + 1);
    t->hashes[j] = hash;
    return (int32_t)t->count++;
}

static void table_free(Table *t) {
    free(t->slots);
    free(t->hashes);
    free(t->arena.data);
    free(t->spans.data);
}

/* A Python list of the table's strings (NULL with an exception set when one is not UTF-8). */
static PyObject *table_strings(const Table *t) {
    PyObject *list = PyList_New((Py_ssize_t)t->count);
    if (!list) return NULL;
    const Span *spans = (const Span *)t->spans.data;
    for (size_t i = 0; i < t->count; i++) {
        PyObject *text =
            PyUnicode_DecodeUTF8(t->arena.data + spans[i].offset, (Py_ssize_t)spans[i].length, "strict");
        if (!text) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, text);
    }
    return list;
}

/* --- the scanner ------------------------------------------------------------------------------ */

typedef struct {
    size_t row, field, start, length; /* a decimal the fast path could not convert exactly */
} SlowNumber;

enum { FIELD_TS, FIELD_DUR, FIELD_FLOPS };

typedef struct {
    const char *begin, *p, *end;
    const char *error; /* what stopped the scan (NULL: none) */
    size_t error_at;
    Buf rows, slow, scratch;
    Table names, categories, texts;
} Scanner;

static int fail(Scanner *s, const char *why) {
    if (!s->error) {
        s->error = why;
        s->error_at = (size_t)(s->p - s->begin);
    }
    return -1;
}

static const unsigned char WHITESPACE[256] = {[' '] = 1, ['\t'] = 1, ['\n'] = 1, ['\r'] = 1};

static void skip_whitespace(Scanner *s) {
    while (s->p < s->end && WHITESPACE[(unsigned char)*s->p]) s->p++;
}

static int expect(Scanner *s, char c) {
    skip_whitespace(s);
    if (s->p >= s->end || *s->p != c) return fail(s, "unexpected byte");
    s->p++;
    return 0;
}

static int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Four hex digits at p (bounds checked by the caller). */
static int32_t hex4(const char *p) {
    int32_t value = 0;
    for (int i = 0; i < 4; i++) {
        int digit = hex_value(p[i]);
        if (digit < 0) return -1;
        value = value * 16 + digit;
    }
    return value;
}

/* Advance p to the next '"', '\\' or control byte (or the end). */
static void skip_plain(Scanner *s) {
    const char *p = s->p, *end = s->end;
#ifdef __SSE2__
    const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\');
    const __m128i control = _mm_set1_epi8(0x1F);
    while (end - p >= 16) {
        __m128i chunk = _mm_loadu_si128((const __m128i *)p);
        __m128i hit = _mm_or_si128(_mm_cmpeq_epi8(chunk, quote), _mm_cmpeq_epi8(chunk, backslash));
        hit = _mm_or_si128(hit, _mm_cmpeq_epi8(_mm_min_epu8(chunk, control), chunk)); /* <= 0x1F */
        int mask = _mm_movemask_epi8(hit);
        if (mask) {
            s->p = p + __builtin_ctz((unsigned)mask);
            return;
        }
        p += 16;
    }
#endif
    while (p < end && *p != '"' && *p != '\\' && (unsigned char)*p >= 0x20) p++;
    s->p = p;
}

/* Appends the UTF-8 encoding of a code point (at most U+10FFFF) to the scratch buffer. */
static int put_code_point(Buf *out, uint32_t c) {
    char bytes[4];
    size_t size;
    if (c < 0x80) {
        bytes[0] = (char)c;
        size = 1;
    } else if (c < 0x800) {
        bytes[0] = (char)(0xC0 | (c >> 6));
        bytes[1] = (char)(0x80 | (c & 0x3F));
        size = 2;
    } else if (c < 0x10000) {
        bytes[0] = (char)(0xE0 | (c >> 12));
        bytes[1] = (char)(0x80 | ((c >> 6) & 0x3F));
        bytes[2] = (char)(0x80 | (c & 0x3F));
        size = 3;
    } else {
        bytes[0] = (char)(0xF0 | (c >> 18));
        bytes[1] = (char)(0x80 | ((c >> 12) & 0x3F));
        bytes[2] = (char)(0x80 | ((c >> 6) & 0x3F));
        bytes[3] = (char)(0x80 | (c & 0x3F));
        size = 4;
    }
    return buf_append(out, bytes, size);
}

/* One escape after its backslash (p at the byte after '\\'); decoded into out when out is set. */
static int scan_escape(Scanner *s, Buf *out) {
    if (s->p >= s->end) return fail(s, "truncated escape");
    char c = *s->p++;
    char plain;
    switch (c) {
        case '"': plain = '"'; break;
        case '\\': plain = '\\'; break;
        case '/': plain = '/'; break;
        case 'b': plain = '\b'; break;
        case 'f': plain = '\f'; break;
        case 'n': plain = '\n'; break;
        case 'r': plain = '\r'; break;
        case 't': plain = '\t'; break;
        case 'u': {
            if (s->end - s->p < 4) return fail(s, "truncated escape");
            int32_t unit = hex4(s->p);
            if (unit < 0) return fail(s, "invalid unicode escape");
            s->p += 4;
            uint32_t code = (uint32_t)unit;
            if (unit >= 0xDC00 && unit <= 0xDFFF) return fail(s, "lone low surrogate");
            if (unit >= 0xD800 && unit <= 0xDBFF) {
                if (s->end - s->p < 6 || s->p[0] != '\\' || s->p[1] != 'u')
                    return fail(s, "lone high surrogate");
                int32_t low = hex4(s->p + 2);
                if (low < 0xDC00 || low > 0xDFFF) return fail(s, "invalid surrogate pair");
                s->p += 6;
                code = 0x10000 + (((uint32_t)unit - 0xD800) << 10) + ((uint32_t)low - 0xDC00);
            }
            if (out && put_code_point(out, code)) return fail(s, "out of memory");
            return 0;
        }
        default:
            return fail(s, "invalid escape");
    }
    if (out && buf_append(out, &plain, 1)) return fail(s, "out of memory");
    return 0;
}

/* A string; p just past its opening quote. Sets *start and *length to its bytes as written and
 * *escaped when it has escapes (decoded into s->scratch when decode is set). */
static int scan_string(Scanner *s, const char **start, size_t *length, int *escaped, int decode) {
    *start = s->p;
    *escaped = 0;
    if (decode) s->scratch.len = 0;
    const char *copied = s->p; /* bytes before this are in scratch (decode only) */
    for (;;) {
        skip_plain(s);
        if (s->p >= s->end) return fail(s, "truncated string");
        char c = *s->p;
        if (c == '"') {
            *length = (size_t)(s->p - *start);
            if (*escaped && decode && buf_append(&s->scratch, copied, (size_t)(s->p - copied)))
                return fail(s, "out of memory");
            s->p++;
            return 0;
        }
        if (c != '\\') return fail(s, "control character in a string");
        if (decode && buf_append(&s->scratch, copied, (size_t)(s->p - copied))) return fail(s, "out of memory");
        *escaped = 1;
        s->p++;
        if (scan_escape(s, decode ? &s->scratch : NULL)) return -1;
        copied = s->p;
    }
}

/* A key (p just past its opening quote): short and plain, so a byte loop; escaped keys are left
 * to msgspec (it unescapes them before matching). */
static int plain_key(Scanner *s, const char **key, size_t *length) {
    const char *p = s->p, *end = s->end;
    while (p < end && *p != '"' && *p != '\\' && (unsigned char)*p >= 0x20) p++;
    if (p >= end) return fail(s, "truncated string");
    if (*p != '"') return fail(s, *p == '\\' ? "escaped key" : "control character in a string");
    *key = s->p;
    *length = (size_t)(p - s->p);
    s->p = p + 1;
    return 0;
}

/* A string value interned in table (p at the opening quote). */
static int scan_interned(Scanner *s, Table *table, int32_t *id) {
    const char *start;
    size_t length;
    int escaped;
    if (s->p >= s->end || *s->p != '"') return fail(s, "not a string");
    s->p++;
    if (scan_string(s, &start, &length, &escaped, 1)) return -1;
    if (escaped) {
        start = s->scratch.data ? s->scratch.data : "";
        length = s->scratch.len;
    }
    *id = table_id(table, start, length);
    return *id < 0 ? fail(s, "out of memory") : 0;
}

enum { NUMBER_INT, NUMBER_FLOAT, NUMBER_SLOW };

typedef struct {
    int kind;
    int64_t integer;
    double real;
    const char *start;
    size_t length;
} Number;

static const double POWERS_OF_TEN[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                         1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

static int is_digit(Scanner *s) { return s->p < s->end && *s->p >= '0' && *s->p <= '9'; }

/* A JSON number, strictly: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
static int scan_number(Scanner *s, Number *n) {
    const char *start = s->p;
    int negative = 0;
    if (s->p < s->end && *s->p == '-') {
        negative = 1;
        s->p++;
    }
    if (!is_digit(s)) return fail(s, "invalid number");
    uint64_t mantissa = 0;
    int digits = 0, exponent = 0, fraction = 0;
    if (*s->p == '0') {
        s->p++;
        if (is_digit(s)) return fail(s, "leading zero");
    } else {
        for (; is_digit(s); s->p++) {
            if (digits < 19) mantissa = mantissa * 10 + (uint64_t)(*s->p - '0');
            else exponent++;
            digits++;
        }
    }
    if (s->p < s->end && *s->p == '.') {
        fraction = 1;
        s->p++;
        if (!is_digit(s)) return fail(s, "invalid number");
        for (; is_digit(s); s->p++) {
            if (mantissa == 0 && *s->p == '0') {
                exponent--;
                continue;
            }
            if (digits < 19) {
                mantissa = mantissa * 10 + (uint64_t)(*s->p - '0');
                exponent--;
            }
            digits++;
        }
    }
    int exponent_written = 0, large_exponent = 0;
    if (s->p < s->end && (*s->p == 'e' || *s->p == 'E')) {
        fraction = 1;
        s->p++;
        int exponent_negative = 0;
        if (s->p < s->end && (*s->p == '+' || *s->p == '-')) exponent_negative = *s->p++ == '-';
        if (!is_digit(s)) return fail(s, "invalid number");
        for (; is_digit(s); s->p++) {
            if (exponent_written < 100000) exponent_written = exponent_written * 10 + (*s->p - '0');
            else large_exponent = 1;
        }
        exponent += exponent_negative ? -exponent_written : exponent_written;
    }
    n->start = start;
    n->length = (size_t)(s->p - start);
    if (!fraction) {
        /* digits <= 19 and the value fits int64 (-2**63 included) */
        if (digits > 19 || mantissa > (uint64_t)INT64_MAX + (uint64_t)negative) return fail(s, "integer out of int64");
        n->kind = NUMBER_INT;
        n->integer = negative ? (int64_t)(0 - mantissa) : (int64_t)mantissa;
        return 0;
    }
    if (!large_exponent && digits <= 19 && mantissa <= (1ULL << 53) && exponent >= -22 && exponent <= 22) {
        double value = (double)mantissa; /* exact */
        value = exponent < 0 ? value / POWERS_OF_TEN[-exponent] : value * POWERS_OF_TEN[exponent];
        n->kind = NUMBER_FLOAT;
        n->real = negative ? -value : value;
        return 0;
    }
    n->kind = NUMBER_SLOW; /* converted after the scan */
    return 0;
}

static int skip_value(Scanner *s, int depth);

static int skip_digits(Scanner *s) {
    if (!is_digit(s)) return fail(s, "invalid number");
    while (is_digit(s)) s->p++;
    return 0;
}

/* A number's syntax only (a skipped value): -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
static int skip_number(Scanner *s) {
    if (s->p < s->end && *s->p == '-') s->p++;
    if (!is_digit(s)) return fail(s, "invalid number");
    if (*s->p == '0') {
        s->p++;
        if (is_digit(s)) return fail(s, "leading zero");
    } else {
        skip_digits(s);
    }
    if (s->p < s->end && *s->p == '.') {
        s->p++;
        if (skip_digits(s)) return -1;
    }
    if (s->p < s->end && (*s->p == 'e' || *s->p == 'E')) {
        s->p++;
        if (s->p < s->end && (*s->p == '+' || *s->p == '-')) s->p++;
        if (skip_digits(s)) return -1;
    }
    return 0;
}

static int skip_literal(Scanner *s, const char *word, size_t size) {
    if ((size_t)(s->end - s->p) < size || memcmp(s->p, word, size) != 0) return fail(s, "invalid literal");
    s->p += size;
    return 0;
}

static int skip_container(Scanner *s, int depth, char close) {
    s->p++;
    skip_whitespace(s);
    if (s->p < s->end && *s->p == close) {
        s->p++;
        return 0;
    }
    for (;;) {
        skip_whitespace(s);
        if (close == '}') {
            const char *start;
            size_t length;
            int escaped;
            if (s->p >= s->end || *s->p != '"') return fail(s, "expected a key");
            s->p++;
            if (scan_string(s, &start, &length, &escaped, 0) || expect(s, ':')) return -1;
        }
        if (skip_value(s, depth + 1)) return -1;
        skip_whitespace(s);
        if (s->p >= s->end) return fail(s, "truncated");
        char c = *s->p++;
        if (c == close) return 0;
        if (c != ',') return fail(s, "expected a comma");
    }
}

/* Any JSON value, checked and skipped. */
static int skip_value(Scanner *s, int depth) {
    if (depth > MAX_DEPTH) return fail(s, "nested too deep");
    skip_whitespace(s);
    if (s->p >= s->end) return fail(s, "truncated");
    const char *start;
    size_t length;
    int escaped;
    switch (*s->p) {
        case '{': return skip_container(s, depth, '}');
        case '[': return skip_container(s, depth, ']');
        case '"': s->p++; return scan_string(s, &start, &length, &escaped, 0);
        case 't': return skip_literal(s, "true", 4);
        case 'f': return skip_literal(s, "false", 5);
        case 'n': return skip_literal(s, "null", 4);
        default: return skip_number(s);
    }
}

/* int | float into a double (and its int64 when written as an integer); slow decimals noted. */
static int scan_real(Scanner *s, size_t row, int field, double *value, int64_t *integer, int *is_int) {
    Number n;
    if (s->p >= s->end || !(*s->p == '-' || (*s->p >= '0' && *s->p <= '9'))) return fail(s, "not a number");
    if (scan_number(s, &n)) return -1;
    *is_int = n.kind == NUMBER_INT;
    if (n.kind == NUMBER_INT) {
        *value = (double)n.integer; /* correctly rounded, as Python's float(int) */
        if (integer) *integer = n.integer;
    } else if (n.kind == NUMBER_FLOAT) {
        *value = n.real;
    } else {
        SlowNumber slow = {row, (size_t)field, (size_t)(n.start - s->begin), n.length};
        if (buf_append(&s->slow, &slow, sizeof slow)) return fail(s, "out of memory");
        *value = 0.0;
    }
    return 0;
}

static int scan_int(Scanner *s, int64_t *value) {
    Number n;
    if (s->p >= s->end || !(*s->p == '-' || (*s->p >= '0' && *s->p <= '9'))) return fail(s, "not an integer");
    if (scan_number(s, &n)) return -1;
    if (n.kind != NUMBER_INT) return fail(s, "not an integer");
    *value = n.integer;
    return 0;
}

/* int | str (a thread or stream id): an integer, or a string's text id (the caller parses it). */
static int scan_id(Scanner *s, int64_t *value, int32_t *text) {
    if (s->p < s->end && *s->p == '"') {
        *value = 0;
        return scan_interned(s, &s->texts, text);
    }
    return scan_int(s, value);
}

/* The raw bytes of any value (msgspec.Raw): their offsets in the chunk. */
static int scan_raw(Scanner *s, int64_t *start, int64_t *end) {
    skip_whitespace(s);
    *start = (int64_t)(s->p - s->begin);
    if (skip_value(s, 2)) return -1;
    *end = (int64_t)(s->p - s->begin);
    return 0;
}

#define KEY_IS(literal) (length == sizeof(literal) - 1 && memcmp(key, literal, length) == 0)

/* An object's next key (p inside the object); 1: the object ended, 0: a key, -1: an error. */
static int next_key(Scanner *s, const char **key, size_t *length, int first) {
    skip_whitespace(s);
    if (s->p >= s->end) return fail(s, "truncated");
    if (*s->p == '}') {
        if (!first) return fail(s, "trailing comma");
        s->p++;
        return 1;
    }
    if (*s->p != '"') return fail(s, "expected a key");
    s->p++;
    if (plain_key(s, key, length)) return -1;
    if (s->p < s->end && *s->p == ':') {
        s->p++;
        return 0;
    }
    return expect(s, ':') ? -1 : 0;
}

/* After a member: 1 when the object ended, 0 when another member follows. */
static int after_member(Scanner *s) {
    skip_whitespace(s);
    if (s->p >= s->end) return fail(s, "truncated");
    char c = *s->p++;
    if (c == '}') return 1;
    if (c == ',') return 0;
    return fail(s, "expected a comma");
}

static int seen_once(Scanner *s, unsigned *seen, unsigned bit) {
    if (*seen & bit) return fail(s, "duplicate key");
    *seen |= bit;
    return 0;
}

/* One member of an event's args (p at its value). */
static int args_member(Scanner *s, Row *row, const char *key, size_t length, unsigned *seen) {
    int is_int, rc;
    if (KEY_IS("stream")) {
        rc = seen_once(s, seen, 1) || scan_id(s, &row->stream, &row->stream_text);
    } else if (KEY_IS("correlation")) {
        rc = seen_once(s, seen, 2) || scan_int(s, &row->correlation);
    } else if (KEY_IS("device")) {
        rc = seen_once(s, seen, 4) || scan_int(s, &row->device);
    } else if (KEY_IS("flops")) {
        size_t index = s->rows.len / sizeof(Row);
        rc = seen_once(s, seen, 8) || scan_real(s, index, FIELD_FLOPS, &row->flops, NULL, &is_int);
    } else if (KEY_IS("Collective name")) {
        rc = seen_once(s, seen, 16) || scan_interned(s, &s->texts, &row->collective);
        if (!rc && s->texts.spans.len && ((const Span *)s->texts.spans.data)[row->collective].length == 0)
            row->collective = NO_ID; /* an empty name is no collective */
    } else if (KEY_IS("In msg nelems")) {
        rc = seen_once(s, seen, 32) || scan_int(s, &row->in_elements);
    } else if (KEY_IS("Out msg nelems")) {
        rc = seen_once(s, seen, 64) || scan_int(s, &row->out_elements);
    } else if (KEY_IS("Group size")) {
        rc = seen_once(s, seen, 128) || scan_int(s, &row->group_size);
    } else if (KEY_IS("dtype")) {
        rc = seen_once(s, seen, 256);
        if (!rc && s->p < s->end && *s->p == 'n') {
            rc = skip_literal(s, "null", 4);
            row->dtype = NO_ID;
        } else if (!rc) {
            rc = scan_interned(s, &s->texts, &row->dtype);
        }
    } else if (KEY_IS("Input Dims")) {
        rc = seen_once(s, seen, 512) || scan_raw(s, &row->dims_start, &row->dims_end);
    } else if (KEY_IS("Input type")) {
        rc = seen_once(s, seen, 1024) || scan_raw(s, &row->types_start, &row->types_end);
    } else {
        rc = skip_value(s, 2);
    }
    return rc ? -1 : 0;
}

typedef int (*MemberReader)(Scanner *s, Row *row, const char *key, size_t length, unsigned *seen);

/* An object's members into row (p at its '{'); *seen: the keys read_member saw. */
static inline int scan_object(Scanner *s, Row *row, MemberReader read_member, unsigned *seen,
                              const char *what) {
    if (s->p >= s->end || *s->p != '{') return fail(s, what);
    s->p++;
    *seen = 0;
    for (int first = 1;; first = 0) {
        const char *key;
        size_t length;
        int status = next_key(s, &key, &length, first);
        if (status) return status < 0 ? -1 : 0;
        skip_whitespace(s);
        if (read_member(s, row, key, length, seen)) return -1;
        status = after_member(s);
        if (status) return status < 0 ? -1 : 0;
    }
}

static int scan_args(Scanner *s, Row *row) {
    unsigned seen;
    return scan_object(s, row, args_member, &seen, "args is not an object");
}

enum { SEEN_CAT = 1, SEEN_NAME = 2, SEEN_TID = 4, SEEN_TS = 8, SEEN_DUR = 16, SEEN_ARGS = 32 };

static int scan_member(Scanner *s, Row *row, const char *key, size_t length, unsigned *seen) {
    size_t index = s->rows.len / sizeof(Row);
    int is_int;
    if (KEY_IS("cat")) {
        if (seen_once(s, seen, SEEN_CAT)) return -1;
        if (s->p < s->end && *s->p == 'n') {
            row->cat = NO_ID;
            return skip_literal(s, "null", 4);
        }
        return scan_interned(s, &s->categories, &row->cat);
    }
    if (KEY_IS("name")) return seen_once(s, seen, SEEN_NAME) || scan_interned(s, &s->names, &row->name);
    if (KEY_IS("tid")) return seen_once(s, seen, SEEN_TID) || scan_id(s, &row->tid, &row->tid_text);
    if (KEY_IS("ts")) {
        if (seen_once(s, seen, SEEN_TS) || scan_real(s, index, FIELD_TS, &row->ts, &row->ts_int, &is_int))
            return -1;
        row->flags |= is_int ? TS_IS_INT : 0;
        return 0;
    }
    if (KEY_IS("dur")) return seen_once(s, seen, SEEN_DUR) || scan_real(s, index, FIELD_DUR, &row->dur, NULL, &is_int);
    if (KEY_IS("args")) return seen_once(s, seen, SEEN_ARGS) || scan_args(s, row);
    return skip_value(s, 1);
}

static const Row NEW_ROW = {
    .ts = NAN, .dur = NAN, .flops = 0.0, .ts_int = 0, .tid = -1, .stream = -1, .correlation = -1,
    .device = -1, .in_elements = -1, .out_elements = -1, .group_size = -1, .dims_start = 0,
    .dims_end = 0, .types_start = 0, .types_end = 0, .cat = NO_ID, .name = NO_ID,
    .collective = NO_ID, .dtype = NO_ID, .tid_text = NO_ID, .stream_text = NO_ID, .flags = 0,
};

/* One event, read into the next row of s->rows (in place: the buffer has room for it). */
static int scan_event(Scanner *s) {
    if (buf_reserve(&s->rows, sizeof(Row))) return fail(s, "out of memory");
    Row *row = (Row *)(s->rows.data + s->rows.len); /* stays put: nothing else grows rows */
    *row = NEW_ROW;
    skip_whitespace(s);
    unsigned seen;
    if (scan_object(s, row, scan_member, &seen, "an event is not an object")) return -1;
    if (!(seen & SEEN_NAME) && (row->name = table_id(&s->names, "", 0)) < 0) return fail(s, "out of memory");
    s->rows.len += sizeof(Row);
    return 0;
}

/* The array of events; with `whole`, nothing but whitespace may follow it (else p stops just past
 * its closing bracket: the rest of a document follows). */
static int scan_array(Scanner *s, int whole) {
    if (expect(s, '[')) return -1;
    skip_whitespace(s);
    if (s->p < s->end && *s->p == ']') {
        s->p++;
    } else {
        for (;;) {
            if (scan_event(s)) return -1;
            skip_whitespace(s);
            if (s->p >= s->end) return fail(s, "truncated");
            char c = *s->p++;
            if (c == ']') break;
            if (c != ',') return fail(s, "expected a comma");
        }
    }
    if (!whole) return 0;
    skip_whitespace(s);
    return s->p == s->end ? 0 : fail(s, "trailing bytes");
}

/* --- the result: rows in a buffer Python wraps without a copy ------------------------------- */

typedef struct {
    PyObject_HEAD
    char *data;
    Py_ssize_t size;
    Py_ssize_t exports;
} Rows;

static int rows_getbuffer(PyObject *self, Py_buffer *view, int flags) {
    Rows *rows = (Rows *)self;
    int rc = PyBuffer_FillInfo(view, self, rows->data ? rows->data : (void *)"", rows->size, 1, flags);
    if (rc == 0) rows->exports++;
    return rc;
}

static void rows_releasebuffer(PyObject *self, Py_buffer *view) {
    (void)view;
    ((Rows *)self)->exports--;
}

static void rows_dealloc(PyObject *self) {
    free(((Rows *)self)->data);
    Py_TYPE(self)->tp_free(self);
}

static PyBufferProcs rows_as_buffer = {rows_getbuffer, rows_releasebuffer};

static PyTypeObject RowsType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "lightspeed.trace.io._kineto_scan.Rows",
    .tp_basicsize = sizeof(Rows),
    .tp_dealloc = rows_dealloc,
    .tp_as_buffer = &rows_as_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The rows of one scanned chunk (read-only buffer; see FIELDS).",
};

static void scanner_free(Scanner *s) {
    free(s->rows.data);
    free(s->slow.data);
    free(s->scratch.data);
    table_free(&s->names);
    table_free(&s->categories);
    table_free(&s->texts);
}

/* The decimals the fast path left: converted by CPython's correctly rounded dtoa. */
static int convert_slow(Scanner *s) {
    const SlowNumber *slow = (const SlowNumber *)s->slow.data;
    size_t count = s->slow.len / sizeof(SlowNumber);
    Row *rows = (Row *)s->rows.data;
    for (size_t i = 0; i < count; i++) {
        if (slow[i].length > 4096) {
            PyErr_SetString(PyExc_ValueError, "a number over 4096 bytes");
            return -1;
        }
        char text[4097];
        memcpy(text, s->begin + slow[i].start, slow[i].length);
        text[slow[i].length] = '\0';
        double value = PyOS_string_to_double(text, NULL, NULL);
        if (value == -1.0 && PyErr_Occurred()) return -1;
        if (!isfinite(value)) {
            PyErr_Format(PyExc_ValueError, "byte %zu: a number out of range", slow[i].start);
            return -1;
        }
        Row *row = &rows[slow[i].row];
        *(slow[i].field == FIELD_TS ? &row->ts : slow[i].field == FIELD_DUR ? &row->dur : &row->flops) = value;
    }
    return 0;
}

static PyObject *scan(PyObject *module, PyObject *args) {
    (void)module;
    PyObject *chunk;
    int whole = 1;
    if (!PyArg_ParseTuple(args, "O!|p:scan", &PyBytes_Type, &chunk, &whole)) return NULL;
    Scanner s;
    memset(&s, 0, sizeof s);
    s.begin = s.p = PyBytes_AS_STRING(chunk);
    s.end = s.begin + PyBytes_GET_SIZE(chunk);
    int rc;
    Py_BEGIN_ALLOW_THREADS
    /* room for the rows up front (a Kineto event takes ~200 bytes of JSON): no copies as they grow */
    rc = buf_reserve(&s.rows, ((size_t)(s.end - s.begin) / 128 + 16) * sizeof(Row)) ? fail(&s, "out of memory")
                                                                                      : scan_array(&s, whole);
    Py_END_ALLOW_THREADS
    PyObject *result = NULL, *names = NULL, *categories = NULL, *texts = NULL;
    Rows *rows = NULL;
    if (rc) {
        PyErr_Format(PyExc_ValueError, "byte %zu: %s", s.error_at, s.error ? s.error : "unreadable");
        goto done;
    }
    if (convert_slow(&s)) goto done;
    if (!(names = table_strings(&s.names)) || !(categories = table_strings(&s.categories)) ||
        !(texts = table_strings(&s.texts)))
        goto done;
    if (!(rows = PyObject_New(Rows, &RowsType))) goto done;
    rows->data = s.rows.data;
    rows->size = (Py_ssize_t)s.rows.len;
    rows->exports = 0;
    s.rows.data = NULL; /* owned by rows now */
    result = Py_BuildValue("(OOOOn)", (PyObject *)rows, names, categories, texts, (Py_ssize_t)(s.p - s.begin));
done:
    if (PyErr_Occurred() && !PyErr_ExceptionMatches(PyExc_ValueError) && !PyErr_ExceptionMatches(PyExc_MemoryError)) {
        /* a kept string that is not UTF-8: msgspec words that error */
        PyErr_Clear();
        PyErr_SetString(PyExc_ValueError, "a string that is not UTF-8");
    }
    Py_XDECREF((PyObject *)rows);
    Py_XDECREF(names);
    Py_XDECREF(categories);
    Py_XDECREF(texts);
    scanner_free(&s);
    return result;
}

static PyMethodDef METHODS[] = {
    {"scan", scan, METH_VARARGS,
     "scan(chunk: bytes, whole=True) -> (rows, names, categories, texts, end): one row per event (see\n"
     "FIELDS); end: the offset just past the array (whole=False: a document may go on after it).\n"
     "Raises ValueError for anything it does not handle exactly as msgspec would."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef MODULE = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_kineto_scan",
    .m_doc = "Kineto events into C columns (see kineto_scan.py).",
    .m_size = -1,
    .m_methods = METHODS,
};

static int add_fields(PyObject *module) {
#define FIELD(name, kind) #name, kind, (Py_ssize_t)offsetof(Row, name)
    PyObject *fields = Py_BuildValue(
        "((ssn)(ssn)(ssn)(ssn)(ssn)(ssn)(ssn)(ssn)(ssn)(ssn)(ssn)(ssn)(ssn)(ssn)(ssn)(ssn)(ssn)(ssn)(ssn)(ssn)(ssn)(ssn))",
        FIELD(ts, "=f8"), FIELD(dur, "=f8"), FIELD(flops, "=f8"), FIELD(ts_int, "=i8"), FIELD(tid, "=i8"),
        FIELD(stream, "=i8"), FIELD(correlation, "=i8"), FIELD(device, "=i8"), FIELD(in_elements, "=i8"),
        FIELD(out_elements, "=i8"), FIELD(group_size, "=i8"), FIELD(dims_start, "=i8"),
        FIELD(dims_end, "=i8"), FIELD(types_start, "=i8"), FIELD(types_end, "=i8"), FIELD(cat, "=i4"),
        FIELD(name, "=i4"), FIELD(collective, "=i4"), FIELD(dtype, "=i4"), FIELD(tid_text, "=i4"),
        FIELD(stream_text, "=i4"), FIELD(flags, "=i4"));
#undef FIELD
    if (!fields) return -1;
    if (PyModule_AddObject(module, "FIELDS", fields)) {
        Py_DECREF(fields);
        return -1;
    }
    return PyModule_AddIntConstant(module, "ROW_BYTES", (long)sizeof(Row)) ||
           PyModule_AddIntConstant(module, "TS_IS_INT", TS_IS_INT) ||
           PyModule_AddIntConstant(module, "MAX_DEPTH", MAX_DEPTH);
}

PyMODINIT_FUNC PyInit__kineto_scan(void) {
    if (PyType_Ready(&RowsType) < 0) return NULL;
    PyObject *module = PyModule_Create(&MODULE);
    if (!module) return NULL;
    if (add_fields(module)) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
