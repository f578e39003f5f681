// tether._native's per-token calls with METH_FASTCALL (see fastpath.go for why).
// Errors are raised as RuntimeError carrying Go's error text, as gopy's wrappers do, so
// tether._native_call.translate maps them the same way.
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include "_cgo_export.h"

static int want_args(const char *name, Py_ssize_t nargs, Py_ssize_t n) {
    if (nargs == n) return 0;
    PyErr_Format(PyExc_TypeError, "%s takes %zd arguments (%zd given)", name, n, nargs);
    return -1;
}

// Integer arguments (int and its subclasses, as gopy's "L" format); -1 with an
// exception set on failure.
static int arg_ll(PyObject *o, long long *out) {
    if (!PyLong_Check(o)) {
        PyErr_Format(PyExc_TypeError, "an integer is required, not %.80s", Py_TYPE(o)->tp_name);
        return -1;
    }
    long long v = PyLong_AsLongLong(o);
    if (v == -1 && PyErr_Occurred()) return -1;
    *out = v;
    return 0;
}

static int arg_ull(PyObject *o, unsigned long long *out) {
    if (!PyLong_Check(o)) {
        PyErr_Format(PyExc_TypeError, "an integer is required, not %.80s", Py_TYPE(o)->tp_name);
        return -1;
    }
    unsigned long long v = PyLong_AsUnsignedLongLong(o);
    if (v == (unsigned long long)-1 && PyErr_Occurred()) return -1;
    *out = v;
    return 0;
}

static PyObject *go_error(char *msg) {
    PyErr_SetString(PyExc_RuntimeError, msg);
    free(msg);
    return NULL;
}

// accept_fill(handle, token, buf, rows, words, index) -> None
static PyObject *fast_accept_fill(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    long long h, token, rows, words, index;
    unsigned long long buf;
    if (want_args("accept_fill", nargs, 6) || arg_ll(args[0], &h) || arg_ll(args[1], &token) ||
        arg_ull(args[2], &buf) || arg_ll(args[3], &rows) || arg_ll(args[4], &words) || arg_ll(args[5], &index))
        return NULL;
    char *err = NULL;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = tether_fast_accept_fill(h, token, buf, rows, words, index, &err);
    Py_END_ALLOW_THREADS
    if (rc != 0) return go_error(err);
    Py_RETURN_NONE;
}

// accept_fill_array(handle, token, array, index) -> None: accept token (token < 0: none),
// then fill row index of a numpy bitmask with the matcher's next tokens; the array checked here through the buffer protocol on every
// call (so a reshaped or resized array is never written through a stale address; the
// export also keeps numpy from reallocating it during the call). NotImplemented, with
// nothing written, when the array is not a writable C-contiguous 1-D or 2-D int32/uint32
// buffer or index is not one of its rows: the caller's checked path then says why.
static PyObject *fast_accept_fill_array(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    long long h, token, index;
    if (want_args("accept_fill_array", nargs, 4) || arg_ll(args[0], &h) || arg_ll(args[1], &token) ||
        arg_ll(args[3], &index))
        return NULL;
    PyObject *arr = args[2];
    if (!PyObject_CheckBuffer(arr)) Py_RETURN_NOTIMPLEMENTED;
    Py_buffer view;
    if (PyObject_GetBuffer(arr, &view, PyBUF_WRITABLE | PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) != 0) {
        PyErr_Clear();
        Py_RETURN_NOTIMPLEMENTED;
    }
    const char *f = view.format;
    long long rows = 0, words = 0;
    if (view.ndim == 2) {
        rows = view.shape[0], words = view.shape[1];
    } else if (view.ndim == 1) {
        rows = 1, words = view.shape[0];
    }
    int ok = view.itemsize == 4 && f != NULL && (f[0] == 'i' || f[0] == 'I') && f[1] == 0 &&
             rows > 0 && words > 0 && index >= 0 && index < rows;
    if (!ok) {
        PyBuffer_Release(&view);
        Py_RETURN_NOTIMPLEMENTED;
    }
    char *err = NULL;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = tether_fast_accept_fill(h, token, (unsigned long long)(uintptr_t)view.buf, rows, words, index, &err);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    if (rc != 0) return go_error(err);
    Py_RETURN_NONE;
}

// fill_count(handle, buf, rows, words, index) -> int
static PyObject *fast_fill_count(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    long long h, rows, words, index, count = 0;
    unsigned long long buf;
    if (want_args("fill_count", nargs, 5) || arg_ll(args[0], &h) || arg_ull(args[1], &buf) ||
        arg_ll(args[2], &rows) || arg_ll(args[3], &words) || arg_ll(args[4], &index))
        return NULL;
    char *err = NULL;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = tether_fast_fill_count(h, buf, rows, words, index, &count, &err);
    Py_END_ALLOW_THREADS
    if (rc != 0) return go_error(err);
    return PyLong_FromLongLong(count);
}

// accept_token(handle, token) -> None
static PyObject *fast_accept_token(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    long long h, token;
    if (want_args("accept_token", nargs, 2) || arg_ll(args[0], &h) || arg_ll(args[1], &token))
        return NULL;
    char *err = NULL;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = tether_fast_accept_token(h, token, &err);
    Py_END_ALLOW_THREADS
    if (rc != 0) return go_error(err);
    Py_RETURN_NONE;
}

static PyMethodDef fast_methods[] = {
    {"accept_fill", (PyCFunction)(void (*)(void))fast_accept_fill, METH_FASTCALL,
     "accept_fill(handle, token, buf, rows, words, index): bindings.MatcherAcceptFillBitmask (token < 0: fill only)"},
    {"accept_fill_array", (PyCFunction)(void (*)(void))fast_accept_fill_array, METH_FASTCALL,
     "accept_fill_array(handle, token, array, index) -> None, or NotImplemented for an array it does not take"},
    {"fill_count", (PyCFunction)(void (*)(void))fast_fill_count, METH_FASTCALL,
     "fill_count(handle, buf, rows, words, index) -> int: bindings.MatcherFillBitmask"},
    {"accept_token", (PyCFunction)(void (*)(void))fast_accept_token, METH_FASTCALL,
     "accept_token(handle, token): bindings.MatcherAcceptToken"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef fast_module = {
    PyModuleDef_HEAD_INIT, "tether._native._fast",
    "tether's per-token calls into the Go core with METH_FASTCALL (bindings/_fastpath).", -1, fast_methods,
};

// tether_fastpath_module returns (a new reference to) the module holding the functions
// above; tether._native_call fetches it once through ctypes.PyDLL, with the GIL held.
PyObject *tether_fastpath_module(void) {
    static PyObject *mod = NULL;
    if (mod == NULL) {
        mod = PyModule_Create(&fast_module);
        if (mod == NULL) return NULL;
    }
    Py_INCREF(mod);
    return mod;
}
