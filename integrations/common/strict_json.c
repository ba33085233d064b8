/* SPDX-License-Identifier: Apache-2.0 */
#include "strict_json.h"

#include <string.h>

#define MAX_DEPTH 64

typedef struct {
    const uint8_t *at, *end;
    uint8_t *out, *out_end;   /* where strings decode to */
} reader;

/* The length of the UTF-8 sequence starting at s (at most `available` bytes), or 0 if invalid. */
static size_t utf8_sequence(const uint8_t *s, size_t available) {
    uint8_t b = s[0];
    if (b < 0x80) return 1;
    size_t n;
    uint32_t min, c;
    if (b >= 0xc2 && b <= 0xdf) { n = 2; min = 0x80; c = b & 0x1f; }
    else if (b >= 0xe0 && b <= 0xef) { n = 3; min = 0x800; c = b & 0x0f; }
    else if (b >= 0xf0 && b <= 0xf4) { n = 4; min = 0x10000; c = b & 0x07; }
    else return 0;
    if (available < n) return 0;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        c = (c << 6) | (s[i] & 0x3f);
    }
    if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) return 0;
    return n;
}

int json_valid_utf8(const uint8_t *bytes, size_t length) {
    size_t at = 0;
    while (at < length) {
        size_t n = utf8_sequence(bytes + at, length - at);
        if (!n) return 0;
        at += n;
    }
    return 1;
}

static void skip_space(reader *r) {
    while (r->at < r->end && (*r->at == ' ' || *r->at == '\t' || *r->at == '\n' || *r->at == '\r')) r->at++;
}

static int hex4(reader *r, uint32_t *value) {
    if (r->end - r->at < 4) return -1;
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        uint8_t h = r->at[i];
        v <<= 4;
        if (h >= '0' && h <= '9') v |= (uint32_t)(h - '0');
        else if (h >= 'a' && h <= 'f') v |= (uint32_t)(h - 'a' + 10);
        else if (h >= 'A' && h <= 'F') v |= (uint32_t)(h - 'A' + 10);
        else return -1;
    }
    r->at += 4;
    *value = v;
    return 0;
}

static int emit(reader *r, const uint8_t *bytes, size_t n) {
    if (!r->out) return 0; /* validating only */
    if ((size_t)(r->out_end - r->out) < n) return -1;
    memcpy(r->out, bytes, n);
    r->out += n;
    return 0;
}

static int emit_code_point(reader *r, uint32_t c) {
    uint8_t b[4];
    size_t n;
    if (c < 0x80) { b[0] = (uint8_t)c; n = 1; }
    else if (c < 0x800) { b[0] = (uint8_t)(0xc0 | (c >> 6)); b[1] = (uint8_t)(0x80 | (c & 0x3f)); n = 2; }
    else if (c < 0x10000) { b[0] = (uint8_t)(0xe0 | (c >> 12)); b[1] = (uint8_t)(0x80 | ((c >> 6) & 0x3f)); b[2] = (uint8_t)(0x80 | (c & 0x3f)); n = 3; }
    else { b[0] = (uint8_t)(0xf0 | (c >> 18)); b[1] = (uint8_t)(0x80 | ((c >> 12) & 0x3f)); b[2] = (uint8_t)(0x80 | ((c >> 6) & 0x3f)); b[3] = (uint8_t)(0x80 | (c & 0x3f)); n = 4; }
    return emit(r, b, n);
}

/* A string at r->at (the opening quote), decoded to r->out when it is set. */
static int read_string(reader *r) {
    if (r->at >= r->end || *r->at != '"') return -1;
    r->at++;
    for (;;) {
        if (r->at >= r->end) return -1;
        uint8_t b = *r->at;
        if (b == '"') { r->at++; return 0; }
        if (b < 0x20) return -1;
        if (b != '\\') {
            size_t n = utf8_sequence(r->at, (size_t)(r->end - r->at));
            if (!n || emit(r, r->at, n) != 0) return -1;
            r->at += n;
            continue;
        }
        if (r->end - r->at < 2) return -1;
        uint8_t e = r->at[1];
        r->at += 2;
        uint8_t plain;
        switch (e) {
        case '"': plain = '"'; break;
        case '\\': plain = '\\'; break;
        case '/': plain = '/'; break;
        case 'b': plain = '\b'; break;
        case 'f': plain = '\f'; break;
        case 'n': plain = '\n'; break;
        case 'r': plain = '\r'; break;
        case 't': plain = '\t'; break;
        case 'u': {
            uint32_t c;
            if (hex4(r, &c) != 0) return -1;
            if (c >= 0xdc00 && c <= 0xdfff) return -1; /* a low surrogate first */
            if (c >= 0xd800 && c <= 0xdbff) {
                uint32_t low;
                if (r->end - r->at < 2 || r->at[0] != '\\' || r->at[1] != 'u') return -1;
                r->at += 2;
                if (hex4(r, &low) != 0 || low < 0xdc00 || low > 0xdfff) return -1;
                c = 0x10000 + ((c - 0xd800) << 10) + (low - 0xdc00);
            }
            if (emit_code_point(r, c) != 0) return -1;
            continue;
        }
        default: return -1;
        }
        if (emit(r, &plain, 1) != 0) return -1;
    }
}

static int digits(reader *r) {
    const uint8_t *start = r->at;
    while (r->at < r->end && *r->at >= '0' && *r->at <= '9') r->at++;
    return r->at > start ? 0 : -1;
}

static int read_number(reader *r) {
    if (r->at < r->end && *r->at == '-') r->at++;
    if (r->at >= r->end) return -1;
    if (*r->at == '0') r->at++;
    else if (digits(r) != 0) return -1;
    if (r->at < r->end && *r->at == '.') { r->at++; if (digits(r) != 0) return -1; }
    if (r->at < r->end && (*r->at == 'e' || *r->at == 'E')) {
        r->at++;
        if (r->at < r->end && (*r->at == '+' || *r->at == '-')) r->at++;
        if (digits(r) != 0) return -1;
    }
    return 0;
}

static int literal(reader *r, const char *word) {
    size_t n = strlen(word);
    if ((size_t)(r->end - r->at) < n || memcmp(r->at, word, n) != 0) return -1;
    r->at += n;
    return 0;
}

static int skip_value(reader *r, int depth);

/* An object or array, validated and skipped (strings not decoded). */
static int skip_container(reader *r, int depth) {
    uint8_t close = *r->at == '{' ? '}' : ']';
    int object = close == '}';
    if (depth >= MAX_DEPTH) return -1;
    r->at++;
    skip_space(r);
    if (r->at < r->end && *r->at == close) { r->at++; return 0; }
    for (;;) {
        if (object) {
            if (read_string(r) != 0) return -1;
            skip_space(r);
            if (r->at >= r->end || *r->at != ':') return -1;
            r->at++;
        }
        if (skip_value(r, depth + 1) != 0) return -1;
        skip_space(r);
        if (r->at >= r->end) return -1;
        if (*r->at == close) { r->at++; return 0; }
        if (*r->at != ',') return -1;
        r->at++;
        skip_space(r);
    }
}

static int skip_value(reader *r, int depth) {
    skip_space(r);
    if (r->at >= r->end) return -1;
    uint8_t *out = r->out;
    r->out = NULL;
    int result;
    switch (*r->at) {
    case '"': result = read_string(r); break;
    case '{': case '[': result = skip_container(r, depth); break;
    case 't': result = literal(r, "true"); break;
    case 'f': result = literal(r, "false"); break;
    case 'n': result = literal(r, "null"); break;
    default: result = read_number(r); break;
    }
    r->out = out;
    return result;
}

int json_read_object(const uint8_t *input, size_t length, json_member *members, size_t count,
                     uint8_t *scratch, size_t scratch_capacity) {
    for (size_t i = 0; i < count; i++) { members[i].present = 0; members[i].value = NULL; members[i].length = 0; }
    reader r = {input, input + length, scratch, scratch + scratch_capacity};
    skip_space(&r);
    if (r.at >= r.end || *r.at != '{') return -1;
    r.at++;
    skip_space(&r);
    if (r.at < r.end && *r.at == '}') {
        r.at++;
    } else {
        for (;;) {
            /* The name decodes into the scratch space, where it is compared and then overwritten. */
            uint8_t *name = r.out;
            if (read_string(&r) != 0) return -1;
            size_t name_length = (size_t)(r.out - name);
            r.out = name;
            json_member *wanted = NULL;
            for (size_t i = 0; i < count && !wanted; i++)
                if (strlen(members[i].name) == name_length && memcmp(members[i].name, name, name_length) == 0) wanted = &members[i];
            skip_space(&r);
            if (r.at >= r.end || *r.at != ':') return -1;
            r.at++;
            skip_space(&r);
            if (wanted) {
                if (wanted->present || r.at >= r.end || *r.at != '"') return -1;
                uint8_t *value = r.out;
                if (read_string(&r) != 0) return -1;
                *wanted = (json_member){wanted->name, 1, value, (size_t)(r.out - value)};
            } else if (skip_value(&r, 1) != 0) {
                return -1;
            }
            skip_space(&r);
            if (r.at >= r.end) return -1;
            if (*r.at == '}') { r.at++; break; }
            if (*r.at != ',') return -1;
            r.at++;
            skip_space(&r);
        }
    }
    skip_space(&r);
    return r.at == r.end ? 0 : -1;
}

int json_object_spans(const uint8_t *input, size_t length, size_t start, json_span *members, size_t capacity,
                      size_t *count, size_t *end, uint8_t *scratch, size_t scratch_capacity) {
    reader r = {input + start, input + length, scratch, scratch + scratch_capacity};
    *count = 0;
    if (r.at >= r.end || *r.at != '{') return -1;
    r.at++;
    skip_space(&r);
    if (r.at < r.end && *r.at == '}') { *end = (size_t)(r.at + 1 - input); return 0; }
    for (;;) {
        if (*count == capacity) return -1;
        json_span *m = &members[(*count)++];
        m->name_start = (size_t)(r.at - input);
        m->name = r.out;
        if (read_string(&r) != 0) return -1;
        m->name_length = (size_t)(r.out - m->name);
        skip_space(&r);
        if (r.at >= r.end || *r.at != ':') return -1;
        r.at++;
        skip_space(&r);
        m->value_start = (size_t)(r.at - input);
        if (skip_value(&r, 1) != 0) return -1;
        m->value_end = (size_t)(r.at - input);
        skip_space(&r);
        if (r.at >= r.end) return -1;
        if (*r.at == '}') { *end = (size_t)(r.at + 1 - input); return 0; }
        if (*r.at != ',') return -1;
        r.at++;
        skip_space(&r);
    }
}

long json_decode_string(const uint8_t *input, size_t length, size_t start, uint8_t *out, size_t capacity) {
    reader r = {input + start, input + length, out, out + capacity};
    if (read_string(&r) != 0) return -1;
    return (long)(r.out - out);
}

size_t json_write_string(uint8_t *out, size_t capacity, const uint8_t *bytes, size_t length) {
    static const char hex[] = "0123456789abcdef";
    if (!json_valid_utf8(bytes, length)) return 0;
    size_t at = 0;
#define PUT(c) do { if (at >= capacity) return 0; out[at++] = (uint8_t)(c); } while (0)
    PUT('"');
    for (size_t i = 0; i < length; i++) {
        uint8_t b = bytes[i];
        if (b == '"' || b == '\\') { PUT('\\'); PUT(b); }
        else if (b == '\n') { PUT('\\'); PUT('n'); }
        else if (b == '\r') { PUT('\\'); PUT('r'); }
        else if (b == '\t') { PUT('\\'); PUT('t'); }
        else if (b < 0x20 || b == 0x7f) { PUT('\\'); PUT('u'); PUT('0'); PUT('0'); PUT(hex[b >> 4]); PUT(hex[b & 15]); }
        else PUT(b);
    }
    PUT('"');
#undef PUT
    return at;
}
