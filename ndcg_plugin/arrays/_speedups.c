/* Optional C loops for the hottest numpy passes over a block's rows (see speedups.py): this file
   holds the module and the loops over strings and text, _speedups_rows.c those over rows.

Each function computes exactly what its numpy definition in the package computes (tests compare
the two on random inputs), or declines with None (the contract in _speedups.h: never an
exception to decline; sizes compared by division, in Py_ssize_t or int64_t); the Python side
falls back to numpy on None and when this module is not built. Arguments are raw buffers (numpy
arrays, Arrow buffers): offsets of Arrow strings (int32 or int64, absolute positions in the data
buffer), the data bytes, and output arrays the caller allocated (nothing is promised of them
when the function declines). Every offset and row is checked against its buffer before it is
read; the loops run without the GIL. */
#include "_speedups.h"

static const uint64_t K1 = 0x9E3779B97F4A7C15ULL, K2 = 0xC2B2AE3D27D4EB4FULL, K3 = 0x165667B19E3779F9ULL;

/* fingerprints(offsets, width, data, out) -> True or None: out[i] = the fingerprint of string i
   (columns.fingerprints: first 8 bytes, last 8 bytes beyond 8, length). */
static PyObject *fingerprints(PyObject *self, PyObject *args) {
    Py_buffer off, data, out;
    int width;
    if (!PyArg_ParseTuple(args, "y*iy*w*", &off, &width, &data, &out)) return NULL;
    PyObject *result = NULL;
    int64_t n = out.len / 8, bad = -1;
    if (!check_width(width) || out.len % 8 || off.len / width < n + 1) { result = declined(); goto done; }
    const uint8_t *d = data.buf;
    uint64_t *o = out.buf;
    Py_BEGIN_ALLOW_THREADS
    for (int64_t i = 0; i < n; i++) {
        int64_t s, len;
        if (!span_of(off.buf, width, i, data.len, &s, &len)) { bad = i; break; }
        uint64_t m = load_le(d + s, len < 8 ? len : 8, d + data.len) * K1 ^ (uint64_t)len * K2;
        if (len > 8) {
            uint64_t t = load_le(d + s + len - 8, 8, d + data.len);
            m ^= ((t * K2) >> 29) ^ (t * K3);
        }
        o[i] = m;
    }
    Py_END_ALLOW_THREADS
    result = bad >= 0 ? declined() : Py_NewRef(Py_True);  /* bad: a string outside the data */
done:
    PyBuffer_Release(&off); PyBuffer_Release(&data); PyBuffer_Release(&out);
    return result;
}

/* heads(offsets, width, data, rows, head, length) -> True or None: of string rows[i] (rows:
   int64; an empty buffer for every string), its first 8 bytes as a big-endian word (zeros after
   its end) and its length (columns.heads). */
static PyObject *heads(PyObject *self, PyObject *args) {
    Py_buffer off, data, rows, head, length;
    int width;
    if (!PyArg_ParseTuple(args, "y*iy*y*w*w*", &off, &width, &data, &rows, &head, &length)) return NULL;
    PyObject *result = NULL;
    int64_t n = head.len / 8, strings = 0, bad = -1;
    int all = rows.len == 0;
    if (!check_width(width)) { result = declined(); goto done; }
    strings = off.len / width - 1;
    if (head.len % 8 || length.len != head.len || (all ? n > strings : !holds(rows.len, 8, n))) {
        result = declined();
        goto done;
    }
    const uint8_t *d = data.buf;
    const int64_t *r = rows.buf;
    uint64_t *h = head.buf;
    int64_t *l = length.buf;
    Py_BEGIN_ALLOW_THREADS
    for (int64_t i = 0; i < n; i++) {
        int64_t at = all ? i : r[i];
        if (at < 0 || at >= strings) { bad = i; break; }
        int64_t s, len;
        if (!span_of(off.buf, width, at, data.len, &s, &len)) { bad = i; break; }
        h[i] = __builtin_bswap64(load_le(d + s, len < 8 ? len : 8, d + data.len));
        l[i] = len;
    }
    Py_END_ALLOW_THREADS
    result = bad >= 0 ? declined() : Py_NewRef(Py_True);  /* bad: a row that names no string in the data */
done:
    PyBuffer_Release(&off); PyBuffer_Release(&data); PyBuffer_Release(&rows);
    PyBuffer_Release(&head); PyBuffer_Release(&length);
    return result;
}

/* empty_field(data, start, end, delimiter, first_column, has_cr) -> bool, or None for a span
   outside the data: columnar.empty_field on the bytes data[start:end]: a delimiter followed by a delimiter, "\n" or (has_cr) "\r", or ending
   the bytes; with first_column, also one that starts them or follows "\n". */
static PyObject *empty_field(PyObject *self, PyObject *args) {
    Py_buffer data;
    Py_ssize_t start, end;
    int delimiter, first_column, has_cr;
    if (!PyArg_ParseTuple(args, "y*nniii", &data, &start, &end, &delimiter, &first_column, &has_cr)) return NULL;
    if (start < 0 || end < start || end > data.len) {
        PyBuffer_Release(&data);
        return declined();
    }
    const uint8_t *c = (const uint8_t *)data.buf + start;
    Py_ssize_t n = end - start;
    const uint8_t d = (uint8_t)delimiter, cr = has_cr ? '\r' : d;  /* without \r, test d twice */
    int found = n > 0 && (c[n - 1] == d || (first_column && c[0] == d));
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; !found && i + 1 < n; i += 4096) {
        Py_ssize_t stop = i + 4096 < n - 1 ? i + 4096 : n - 1;
        int hit = 0;
        for (Py_ssize_t j = i; j < stop; j++) {
            uint8_t a = c[j], b = c[j + 1];
            hit |= (a == d) & ((b == d) | (b == '\n') | (b == cr));
            hit |= first_column & (a == '\n') & (b == d);
        }
        found = hit;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&data);
    return PyBool_FromLong(found);
}

/* increasing_codes(offsets, width, data, previous, code, out): the group codes of strings that
   never decrease (byte order, a prefix first): out[i] (int32 or int64, by its size) counts the
   distinct strings before string i, from `code` for the first string when it equals
   `previous` (bytes, or None for no string before), from code + 1 otherwise. Returns the last
   code given, or None at the first string smaller than the one before it (and when the
   arguments disagree). any_order (optional, 0 by default): a string smaller than the one before
   it is no reason to stop; the codes then number the runs of equal strings, in order. */
static PyObject *increasing_codes(PyObject *self, PyObject *args) {
    Py_buffer off, data, prev, out;
    int width, any_order = 0;
    long long code;
    PyObject *previous;
    if (!PyArg_ParseTuple(args, "y*iy*OLw*|p", &off, &width, &data, &previous, &code, &out, &any_order)) return NULL;
    PyObject *result = NULL;
    int have_prev = previous != Py_None;
    if (have_prev && PyObject_GetBuffer(previous, &prev, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&off); PyBuffer_Release(&data); PyBuffer_Release(&out);
        return NULL;
    }
    int64_t n = 0, bad = -1, item = 0;
    int decreasing = 0;
    if (!check_width(width)) { result = declined(); goto done; }
    n = (int64_t)(off.len / width) - 1;
    item = holds(out.len, 4, n) ? 4 : holds(out.len, 8, n) ? 8 : 0;
    if (n < 0 || (n > 0 && item == 0)) { result = declined(); goto done; }
    const uint8_t *d = data.buf, *last = have_prev ? prev.buf : NULL;
    const uint8_t *last_end = have_prev ? (const uint8_t *)prev.buf + prev.len : NULL;
    int64_t last_len = have_prev ? prev.len : 0;
    /* the first 8 bytes as big-endian words first (the previous string's kept from its turn): a
       prefix of 8 bytes or fewer is the word of the longer string, and then the shorter one */
    uint64_t b = have_prev ? __builtin_bswap64(load_le(last, last_len < 8 ? last_len : 8, last_end)) : 0;
    Py_BEGIN_ALLOW_THREADS
    for (int64_t i = 0; i < n; i++) {
        int64_t s, len;
        if (!span_of(off.buf, width, i, data.len, &s, &len)) { bad = i; break; }
        uint64_t a = __builtin_bswap64(load_le(d + s, len < 8 ? len : 8, d + data.len));
        if (last == NULL) {
            code++;
        } else {
            int c = (a > b) - (a < b);
            if (c == 0 && len > 8 && last_len > 8) {
                int64_t m = (len < last_len ? len : last_len) - 8;
                c = m ? memcmp(d + s + 8, last + 8, (size_t)m) : 0;
            }
            if (c == 0) c = (len > last_len) - (len < last_len);
            if (c < 0 && !any_order) { decreasing = 1; break; }
            code += c != 0;
        }
        if (item == 4) ((int32_t *)out.buf)[i] = (int32_t)code; else ((int64_t *)out.buf)[i] = code;
        b = a;
        last = d + s;
        last_end = d + data.len;
        last_len = len;
    }
    Py_END_ALLOW_THREADS
    result = decreasing || bad >= 0 ? declined() : PyLong_FromLongLong(code);  /* bad: a string outside the data */
done:
    if (have_prev) PyBuffer_Release(&prev);
    PyBuffer_Release(&off); PyBuffer_Release(&data); PyBuffer_Release(&out);
    return result;
}

/* equal_at(offsets_a, width_a, data_a, rows_a, offsets_b, width_b, data_b, rows_b, out) -> True or
   None: out[i] (uint8) = string rows_a[i] of a equals string rows_b[i] of b, byte for byte. */
static PyObject *equal_at(PyObject *self, PyObject *args) {
    Py_buffer oa, da, ra, ob, db, rb, out;
    int wa, wb;
    if (!PyArg_ParseTuple(args, "y*iy*y*y*iy*y*w*", &oa, &wa, &da, &ra, &ob, &wb, &db, &rb, &out)) return NULL;
    PyObject *result = NULL;
    int64_t n = out.len, bad = -1;
    if (!check_width(wa) || !check_width(wb) || !holds(ra.len, 8, n) || !holds(rb.len, 8, n)) {
        result = declined();
        goto done;
    }
    int64_t sa = oa.len / wa - 1, sb = ob.len / wb - 1;
    const int64_t *x = ra.buf, *y = rb.buf;
    const uint8_t *pa = da.buf, *pb = db.buf;
    uint8_t *o = out.buf;
    Py_BEGIN_ALLOW_THREADS
    for (int64_t i = 0; i < n; i++) {
        if (x[i] < 0 || x[i] >= sa || y[i] < 0 || y[i] >= sb) { bad = i; break; }
        int64_t s1, n1, s2, n2;
        if (!span_of(oa.buf, wa, x[i], da.len, &s1, &n1) || !span_of(ob.buf, wb, y[i], db.len, &s2, &n2)) {
            bad = i;
            break;
        }
        o[i] = n1 == n2 && (n1 == 0 || memcmp(pa + s1, pb + s2, (size_t)n1) == 0);
    }
    Py_END_ALLOW_THREADS
    result = bad >= 0 ? declined() : Py_NewRef(Py_True);  /* bad: a pair that names no string in the data */
done:
    PyBuffer_Release(&oa); PyBuffer_Release(&da); PyBuffer_Release(&ra);
    PyBuffer_Release(&ob); PyBuffer_Release(&db); PyBuffer_Release(&rb); PyBuffer_Release(&out);
    return result;
}

/* The number syntax taken here (anything else declines the block): -?[0-9]+ for integers of at
   most 18 digits after leading zeros; -?[0-9]+(\.[0-9]+)? for decimals whose digits, leading
   zeros aside, make an integer M <= 2^53 with at most 22 after the point: M and 10^k are then
   exact doubles and one division rounds M / 10^k correctly, as Python's float() does. */
static const double POW10[23] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14,
                                 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

static int read_number(const uint8_t *s, const uint8_t *e, int integer, int64_t *i_out, double *f_out) {
    int negative = s < e && *s == '-';
    s += negative;
    if (s == e) return 0;
    while (s < e && *s == '0') s++;  /* leading zeros: not digits of M */
    uint64_t m = 0;  /* wraps past 19 digits, which the count refuses */
    const uint8_t *first = s;
    while (s < e && (unsigned)(*s - '0') < 10) m = m * 10 + (uint64_t)(*s++ - '0');
    int64_t digits = s - first, after = -1;  /* after: digits after the point, -1 for no point */
    if (s < e && *s == '.' && !integer) {
        const uint8_t *point = ++s;
        while (s < e && (unsigned)(*s - '0') < 10) m = m * 10 + (uint64_t)(*s++ - '0');
        after = s - point;
        digits += after;
        if (after == 0) return 0;  /* "5." is left to the other parsers */
    }
    if (s != e || digits > 18) return 0;
    if (integer) { *i_out = negative ? -(int64_t)m : (int64_t)m; return 1; }
    if (m > (UINT64_C(1) << 53) || after > 22) return 0;
    double v = after > 0 ? (double)m / POW10[after] : (double)m;
    *f_out = negative ? -v : v;
    return 1;
}

/* The first byte from p on that is not a plain field byte (ASCII above space, or a control byte
   other than whitespace and NUL), or stop: eight bytes at a time where eight remain (the lowest byte
   below 0x21 or above 0x7F of a little-endian word: borrows only mark bytes after it). */
static inline const uint8_t *field_end(const uint8_t *p, const uint8_t *stop, const uint8_t *cls) {
    for (;;) {
#if !(defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__)
        while (stop - p >= 8) {
            uint64_t x;
            memcpy(&x, p, 8);
            uint64_t m = (((x - UINT64_C(0x2121212121212121)) & ~x) | x) & UINT64_C(0x8080808080808080);
            if (m) { p += __builtin_ctzll(m) >> 3; break; }
            p += 8;
        }
#endif
        while (p < stop && cls[*p] == 0 && *p > 0x20) p++;
        if (p == stop || cls[*p] != 0) return p;
        p++;  /* a control byte that is no whitespace: part of the field */
    }
}

/* n bytes from src to dst, which has 8 bytes to spare beyond them: one 8-byte copy for an id of
   at most 8 bytes (a memcpy of a constant size is one load and one store) where 8 can be read */
static inline void copy_field(uint8_t *dst, const uint8_t *src, int64_t n, const uint8_t *src_end) {
    if (n <= 8 && src_end - src >= 8) memcpy(dst, src, 8); else memcpy(dst, src, (size_t)n);
}

/* parse_columns(data, start, end, delimiter, ncols, query_at, doc_at, value_at, integer,
   q_offsets, q_data, d_offsets, d_data, values): the lines of data[start:end] in the simple form
   (ASCII; fields cut by the delimiter alone; ncols fields a line, none empty; no other
   whitespace, no \r, no NUL byte, no blank line, no query id starting with '#'; values in
   read_number's syntax), as columnar.parse_block reads them: the query and doc ids as Arrow large-string
   offsets and bytes, the values (int64 or float64). Returns the number of lines, or None for a
   block outside that form (the caller then parses it as before) or arguments that disagree. */
static PyObject *parse_columns(PyObject *self, PyObject *args) {
    Py_buffer data, qo, qd, dof, dd, vals;
    Py_ssize_t start, end;
    int delim, ncols, qa, da, va, integer;
    if (!PyArg_ParseTuple(args, "y*nniiiiiiw*w*w*w*w*", &data, &start, &end, &delim, &ncols, &qa, &da, &va,
                          &integer, &qo, &qd, &dof, &dd, &vals)) return NULL;
    PyObject *result = NULL;
    int64_t cap = qo.len / 8 - 1, rows = 0;
    if (start < 0 || end < start || end > data.len || cap < 0 || qo.len % 8 || dof.len != qo.len
        || !holds(vals.len, 8, cap) || qd.len - (end - start) < 8 || dd.len - (end - start) < 8 || ncols < 1
        || ncols > 64 || qa < 0 || qa >= ncols || da < 0 || da >= ncols || va < 0 || va >= ncols
        || (delim != ' ' && delim != '\t')) {
        result = declined();
        goto done;
    }
    uint8_t cls[256];  /* 0: a field's byte; 1: the delimiter; 2: a line end; 3: outside the form */
    for (int c = 0; c < 256; c++)  /* a NUL is refused by the line parser, which names its line */
        cls[c] = c >= 0x80 || c == 0 || c == '\r' || c == '\t' || c == ' ' || c == '\v' || c == '\f' ? 3 : 0;
    cls[delim] = 1;
    cls['\n'] = 2;
    const uint8_t *d = data.buf, *p = d + start, *stop = d + end;
    int64_t *q_off = qo.buf, *d_off = dof.buf, qpos = 0, dpos = 0;
    uint8_t *q_out = qd.buf, *d_out = dd.buf;
    int ok = 1;
    Py_BEGIN_ALLOW_THREADS
    q_off[0] = d_off[0] = 0;
    while (ok && p < stop) {
        if (rows >= cap) { ok = 0; break; }
        int field = 0;
        for (;;) {  /* one field a turn */
            const uint8_t *f = p;
            p = field_end(p, stop, cls);
            int kind = p < stop ? cls[*p] : 2;
            if (kind == 3 || p == f || field >= ncols) { ok = 0; break; }
            if (field == qa) {
                if (*f == '#') { ok = 0; break; }
                copy_field(q_out + qpos, f, p - f, stop);
                qpos += p - f;
            }
            if (field == da) {
                copy_field(d_out + dpos, f, p - f, stop);
                dpos += p - f;
            }
            if (field == va) {
                int64_t iv;
                double fv;
                if (!read_number(f, p, integer, &iv, &fv)) { ok = 0; break; }
                if (integer) ((int64_t *)vals.buf)[rows] = iv; else ((double *)vals.buf)[rows] = fv;
            }
            field++;
            if (kind == 2) { p++; break; }  /* the line's end (or the block's) */
            p++;  /* past the delimiter */
        }
        if (!ok || field != ncols) { ok = 0; break; }
        rows++;
        q_off[rows] = qpos;
        d_off[rows] = dpos;
    }
    Py_END_ALLOW_THREADS
    result = ok ? PyLong_FromLongLong(rows) : declined();
done:
    PyBuffer_Release(&data); PyBuffer_Release(&qo); PyBuffer_Release(&qd);
    PyBuffer_Release(&dof); PyBuffer_Release(&dd); PyBuffer_Release(&vals);
    return result;
}

static PyMethodDef methods[] = {
    {"parse_columns", parse_columns, METH_VARARGS, "parse_columns(data, start, end, delimiter, ncols, query_at, doc_at, "
                                                   "value_at, integer, q_offsets, q_data, d_offsets, d_data, values) -> rows or None"},
    {"tied_rows", ndcg_tied_rows, METH_VARARGS, "tied_rows(group, width, score, out) -> count or None"},
    {"sort_ties", ndcg_sort_ties, METH_VARARGS, "sort_ties(group, width, score, rows, head, length, order) -> True or None"},
    {"split_sums", ndcg_split_sums, METH_VARARGS, "split_sums(values) -> [(E, hi, mid, lo, count)] or None"},
    {"ideal_dcg", ndcg_ideal_dcg, METH_VARARGS, "ideal_dcg(codes, labels, cutoff, gain, tables, discount, out) -> True or None"},
    {"ranked_top", ndcg_ranked_top, METH_VARARGS, "ranked_top(score, sizes, depth, only, group, width, top, local) -> count or None"},
    {"ranked_rows", ndcg_ranked_rows, METH_VARARGS, "ranked_rows(group, width, score, rel, judged, order, depth, "
                                                   "whole_ties, q, rank, rel_out, judged_out, score_out) -> count or None"},
    {"sort_runs", ndcg_sort_runs, METH_VARARGS, "sort_runs(keys, codes, most, order) -> True or None"},
    {"dcg", ndcg_dcg, METH_VARARGS, "dcg(q, width, rank, rel, gain, negative, discount, cutoff, out) -> True or None"},
    {"equal_at", equal_at, METH_VARARGS, "equal_at(offsets_a, width_a, data_a, rows_a, offsets_b, width_b, data_b, rows_b, out) "
                                          "-> True or None"},
    {"increasing_codes", increasing_codes, METH_VARARGS, "increasing_codes(offsets, width, data, previous, code, out, any_order=False) -> code or None"},
    {"empty_field", empty_field, METH_VARARGS, "empty_field(data, start, end, delimiter, first_column, has_cr) -> bool or None"},
    {"fingerprints", fingerprints, METH_VARARGS, "fingerprints(offsets, width, data, out) -> True or None"},
    {"heads", heads, METH_VARARGS, "heads(offsets, width, data, rows, head, length) -> True or None"},
    {"distinct_small", ndcg_distinct_small, METH_VARARGS, "distinct_small(fp, codes, width, most) -> bool or None"},
    {"find_pairs", ndcg_find_pairs, METH_VARARGS, "find_pairs(keys, starts, group, width, codes, fp, shift, rows, at) -> count or None"},
    {"find_in_ranges", ndcg_find_in_ranges, METH_VARARGS, "find_in_ranges(keys, starts, codes, width, needles, out) -> True or None"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, .m_name = "_speedups",
                                    .m_doc = "C loops for ndcg_plugin.speedups", .m_size = -1, .m_methods = methods};

PyMODINIT_FUNC PyInit__speedups(void) { return PyModule_Create(&module); }
