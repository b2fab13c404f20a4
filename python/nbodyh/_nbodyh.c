/* _nbodyh.c - the nbodyh extension module: CPython + numpy over the public API of nbody.h.

   A thin skin (DESIGN.md): nothing here reaches into the library's internals. What it adds
   is what Python needs and C does not:
   - System: an nbody_system owned by a Python object; its arrays are numpy views of that
     memory (the view holds a reference to the System, so the memory outlives every view).
   - Simulation: an nbody_sim plus the Python callables of its desc. The library calls back
     through ONE trampoline (nbpy_trampoline) that takes the GIL, calls, keeps the first
     exception and asks the library to stop; advance re-raises it with the state of the last
     accepted step kept. The GIL is released around every long call.
   - Errors: nbody_result -> the Python exception (nbpy_raise), with the line the library
     logged (the desc's log hook writes into a buffer owned by the call).
   - Memory: every byte the library allocates goes through a counting allocator (the
     NBODY_MALLOC macros for systems, desc.allocator for simulations) that the tests read. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

/* ==== the counting allocator ================================================================ */
/* Blocks carry their size in a header so that free can count bytes. 64 bytes, a cache line:
   a block then sits where malloc put it modulo 64, so the engines' vector loads split cache
   lines exactly as they do in a C program (a 16-byte header moved every array by a quarter
   line). PyMem_Raw* needs no GIL: the library allocates inside calls that released it. */
#define NBPY_HDR 64
static long long nbpy_live_blocks, nbpy_live_bytes, nbpy_total_blocks;
#if defined(__GNUC__) || defined(__clang__)
#define NBPY_ADD(v, d) ((void)__atomic_add_fetch(&(v), (long long)(d), __ATOMIC_RELAXED))
#elif defined(_MSC_VER)
#include <intrin.h>
#define NBPY_ADD(v, d) ((void)_InterlockedExchangeAdd64((volatile __int64 *)&(v), (__int64)(d)))
#else
#define NBPY_ADD(v, d) ((void)((v) += (d)))
#endif

static void *nbpy_malloc(size_t size) {
    unsigned char *p = (unsigned char *)PyMem_RawMalloc(size + NBPY_HDR);
    if (!p) return NULL;
    memcpy(p, &size, sizeof size);
    NBPY_ADD(nbpy_live_blocks, 1);
    NBPY_ADD(nbpy_live_bytes, size);
    NBPY_ADD(nbpy_total_blocks, 1);
    return p + NBPY_HDR;
}

static void nbpy_free(void *ptr) {
    size_t size;
    unsigned char *p;
    if (!ptr) return;
    p = (unsigned char *)ptr - NBPY_HDR;
    memcpy(&size, p, sizeof size);
    NBPY_ADD(nbpy_live_blocks, -1);
    NBPY_ADD(nbpy_live_bytes, -(long long)size);
    PyMem_RawFree(p);
}

static void *nbpy_realloc(void *ptr, size_t size) {
    size_t old;
    unsigned char *p;
    if (!ptr) return nbpy_malloc(size);
    p = (unsigned char *)ptr - NBPY_HDR;
    memcpy(&old, p, sizeof old);
    p = (unsigned char *)PyMem_RawRealloc(p, size + NBPY_HDR);
    if (!p) return NULL;
    memcpy(p, &size, sizeof size);
    NBPY_ADD(nbpy_live_bytes, (long long)size - (long long)old);
    return p + NBPY_HDR;
}

#ifndef NBODYH_FEATURES
#define NBODYH_FEATURES ""         /* set by setup.py: "openmp,opencl,cuda" as built */
#endif
#define NBODY_MALLOC(sz) nbpy_malloc(sz)
#define NBODY_REALLOC(p, sz) nbpy_realloc(p, sz)
#define NBODY_FREE(p) nbpy_free(p)
#define NBODY_IMPLEMENTATION
#include "nbody.h"

static void *nbpy_desc_alloc(size_t size, void *user_data) { (void)user_data; return nbpy_malloc(size); }
static void nbpy_desc_free(void *p, void *user_data) { (void)user_data; nbpy_free(p); }

/* numpy's type for nbody_real (the package is built in double; float works the same way) */
#define NBPY_NPY_REAL (sizeof(nbody_real) == sizeof(float) ? NPY_FLOAT : NPY_DOUBLE)

/* ==== exceptions ============================================================================ */
static PyObject *nbpy_Error, *nbpy_UnavailableError, *nbpy_FormatError, *nbpy_DeviceError,
    *nbpy_StepTooSmallError, *nbpy_CancelledError, *nbpy_BusyError, *nbpy_Warning;

/* ==== the call context: the log buffer, the released thread state, the saved exception ===== */
#define NBPY_LOG_BYTES 2048
#define NBPY_VIEWS 32
typedef struct nbpy_ctx {
    PyThreadState *ts;             /* non-NULL while the GIL is released around a library call */
    PyObject *exc_type, *exc_value, *exc_tb;   /* the first exception a callback raised */
    PyObject *owner;               /* the Simulation the hooks receive (borrowed), or NULL */
    PyObject *extra_force, *before_step, *after_step, *progress, *log;   /* callables or NULL */
    PyObject *bar;                 /* advance(progress=True): the display, or NULL */
    double progress_interval;      /* the user's, seconds (0: every accepted step) */
    double progress_last, bar_last;
    unsigned long long progress_steps;
    int stop_requested;            /* a progress callback returned true */
    struct nbpy_view { const nbody_real *data; size_t n; int writable; PyObject *array; } views[NBPY_VIEWS];
    int nviews;                    /* extra_force's numpy views, reused while nobody keeps one */
    char error[NBPY_LOG_BYTES];    /* the last ERROR line the library logged */
    char warnings[NBPY_LOG_BYTES]; /* WARNING lines, '\n'-separated, turned into warnings */
} nbpy_ctx;

/* around a library call that may call back: the callbacks find the thread state in c */
static void nbpy_release(nbpy_ctx *c) { c->ts = PyEval_SaveThread(); }
static void nbpy_acquire(nbpy_ctx *c) {
    PyThreadState *ts = c->ts;
    c->ts = NULL;
    PyEval_RestoreThread(ts);
}

/* repr(x) of a double as a C string for PyUnicode_FromFormat("%s"); "?" when out of memory */
static const char *nbpy_fmt(double x, char *buf, size_t size) {
    char *s = PyOS_double_to_string(x, 'r', 0, Py_DTSF_ADD_DOT_0, NULL);
    if (!s) { PyErr_Clear(); return "?"; }
    PyOS_snprintf(buf, size, "%s", s);
    PyMem_Free(s);
    return buf;
}

/* the desc's log hook: into the buffers (no GIL needed); the user's log callable, if any,
   through the trampoline */
static int nbpy_trampoline(nbpy_ctx *c, PyObject *fn, PyObject *const *args, size_t nargs, int *truth);

static void nbpy_log_hook(nbody_log_level level, const char *message, void *user_data) {
    nbpy_ctx *c = (nbpy_ctx *)user_data;
    if (level == NBODY_LOG_ERROR) {
        strncpy(c->error, message, NBPY_LOG_BYTES - 1);
        c->error[NBPY_LOG_BYTES - 1] = 0;
    } else if (level == NBODY_LOG_WARNING) {
        size_t used = strlen(c->warnings);
        if (used + strlen(message) + 2 < NBPY_LOG_BYTES) {
            if (used) c->warnings[used++] = '\n';
            strcpy(c->warnings + used, message);
        }
    }
    if (c->log && !c->exc_type) {
        static const char *names[] = {"error", "warning", "info"};
        PyThreadState *ts = c->ts;
        PyObject *args[2];
        int truth;
        if (ts) { c->ts = NULL; PyEval_RestoreThread(ts); }
        args[0] = PyUnicode_FromString(names[(int)level <= 2 ? (int)level : 2]);
        args[1] = PyUnicode_FromString(message);
        if (args[0] && args[1]) nbpy_trampoline(c, c->log, args, 2, &truth);
        else PyErr_Fetch(&c->exc_type, &c->exc_value, &c->exc_tb);
        Py_XDECREF(args[0]);
        Py_XDECREF(args[1]);
        if (ts) c->ts = PyEval_SaveThread();
    }
}

/* the library's warnings as Python warnings (after the call, GIL held) */
static int nbpy_emit_warnings(nbpy_ctx *c) {
    char *line = c->warnings, *end;
    while (*line) {
        end = strchr(line, '\n');
        if (end) *end = 0;
        if (PyErr_WarnEx(nbpy_Warning, line, 2) < 0) return -1;
        if (!end) break;
        line = end + 1;
    }
    c->warnings[0] = 0;
    return 0;
}

/* nbody_result -> exception, with the library's reason: the line its log hook caught (calls
   with a desc), else its last error on this thread (calls without one: load, save, ...) */
static PyObject *nbpy_raise(nbody_result r, const nbpy_ctx *c, const char *what) {
    PyObject *type;
    const char *reason = (c && c->error[0]) ? c->error : (!c && nbody_last_error()[0]) ? nbody_last_error() : nbody_result_string(r);
    switch (r) {
    case NBODY_ERR_INVALID_ARGUMENT: type = PyExc_ValueError; break;
    case NBODY_ERR_OUT_OF_MEMORY: return PyErr_NoMemory();
    case NBODY_ERR_UNAVAILABLE: type = nbpy_UnavailableError; break;
    case NBODY_ERR_DEVICE: type = nbpy_DeviceError; break;
    case NBODY_ERR_NOT_FINITE: type = PyExc_FloatingPointError; break;
    case NBODY_ERR_STEP_TOO_SMALL: type = nbpy_StepTooSmallError; break;
    case NBODY_ERR_IO: type = PyExc_OSError; break;
    case NBODY_ERR_FORMAT: type = nbpy_FormatError; break;
    case NBODY_ERR_CANCELLED: type = nbpy_CancelledError; break;
    case NBODY_ERR_BUSY: type = nbpy_BusyError; break;
    default: type = nbpy_Error; break;
    }
    if (reason[0] == 'n' && !strncmp(reason, "nbody: ", 7)) reason += 7;
    if (strstr(reason, what)) PyErr_Format(type, "%s", reason);   /* the reason names the file already */
    else PyErr_Format(type, "%s: %s", what, reason);
    return NULL;
}

/* ==== the one trampoline ===================================================================== */
/* Called by the library (GIL released, c->ts set) or from Python (GIL held, c->ts NULL).
   Calls fn(*args); on an exception keeps the first one in c and returns -1; else 0 with
   *truth = bool(result). After an exception every later call returns -1 at once without
   calling Python: the caller asks the library to stop (hooks and progress return nonzero,
   extra forces write NaN, which the library rejects keeping the last good state). */
static int nbpy_trampoline(nbpy_ctx *c, PyObject *fn, PyObject *const *args, size_t nargs, int *truth) {
    PyThreadState *ts = c->ts;
    PyObject *res;
    int rc = 0;
    *truth = 0;
    if (c->exc_type) return -1;
    if (ts) { c->ts = NULL; PyEval_RestoreThread(ts); }
    res = PyObject_Vectorcall(fn, args, nargs, NULL);
    if (res) {
        *truth = res != Py_None && PyObject_IsTrue(res) > 0;
        Py_DECREF(res);
    }
    if (PyErr_Occurred()) {
        PyErr_Fetch(&c->exc_type, &c->exc_value, &c->exc_tb);
        rc = -1;
    }
    if (ts) c->ts = PyEval_SaveThread();
    return rc;
}

/* after a library call (GIL held): the saved exception, else the result as an exception */
static int nbpy_check(nbpy_ctx *c, nbody_result r, const char *what) {
    if (c->exc_type) {
        PyErr_Restore(c->exc_type, c->exc_value, c->exc_tb);
        c->exc_type = c->exc_value = c->exc_tb = NULL;
        c->error[0] = 0;
        return -1;
    }
    if (nbpy_emit_warnings(c) < 0) return -1;
    if (r != NBODY_OK && r != NBODY_STOPPED) {
        nbpy_raise(r, c, what);
        c->error[0] = 0;
        return -1;
    }
    c->error[0] = 0;
    return 0;
}

/* ==== the library's callbacks, each through the trampoline ================================= */
static PyObject *nbpy_real_array(nbody_real *data, size_t n, int writable, PyObject *base) {
    npy_intp dims[1];
    PyObject *a;
    dims[0] = (npy_intp)n;
    a = PyArray_New(&PyArray_Type, 1, dims, NBPY_NPY_REAL, NULL, data, 0,
                    writable ? NPY_ARRAY_CARRAY : NPY_ARRAY_CARRAY_RO, NULL);
    if (a && base) {
        Py_INCREF(base);
        if (PyArray_SetBaseObject((PyArrayObject *)a, base) < 0) { Py_DECREF(a); return NULL; }
    }
    return a;
}

/* extra_force's arrays: views of the library's buffers, made once per (buffer, n) and reused
   while only the cache holds them (building ten numpy arrays a call cost more than the call).
   A view the callback kept is handed over: its base becomes the simulation (the memory lives
   as long as the simulation keeps that buffer) and the cache forgets it. */
static PyObject *nbpy_view_get(nbpy_ctx *c, const nbody_real *data, size_t n, int writable) {
    int i;
    PyObject *a;
    for (i = 0; i < c->nviews; ++i) {
        struct nbpy_view *v = &c->views[i];
        if (v->data == data && v->n == n && v->writable == writable && Py_REFCNT(v->array) == 1) {
            Py_INCREF(v->array);
            return v->array;
        }
    }
    a = nbpy_real_array((nbody_real *)data, n, writable, NULL);
    if (a && c->nviews < NBPY_VIEWS) {
        struct nbpy_view *v = &c->views[c->nviews++];
        v->data = data; v->n = n; v->writable = writable; v->array = a;
        Py_INCREF(a);
    }
    return a;
}

/* after the call: the views the callback kept leave the cache with the simulation as base */
static void nbpy_views_settle(nbpy_ctx *c) {
    int i = 0;
    while (i < c->nviews) {
        struct nbpy_view *v = &c->views[i];
        if (Py_REFCNT(v->array) > 1) {
            if (c->owner) {
                Py_INCREF(c->owner);
                if (PyArray_SetBaseObject((PyArrayObject *)v->array, c->owner) < 0) PyErr_Clear();
            }
            Py_DECREF(v->array);
            *v = c->views[--c->nviews];
        } else {
            ++i;
        }
    }
}

static void nbpy_views_clear(nbpy_ctx *c) {
    while (c->nviews > 0) Py_CLEAR(c->views[--c->nviews].array);
}

static void nbpy_extra_force(size_t n, nbody_real t, const nbody_real *x, const nbody_real *y, const nbody_real *z,
                             const nbody_real *vx, const nbody_real *vy, const nbody_real *vz, const nbody_real *m,
                             nbody_real *ax, nbody_real *ay, nbody_real *az, void *user_data) {
    nbpy_ctx *c = (nbpy_ctx *)user_data;
    PyThreadState *ts = c->ts;
    PyObject *args[11];
    const nbody_real *in[7];
    nbody_real *out[3];
    int i, truth, ok = 1;
    size_t k;
    if (!c->exc_type) {
        in[0] = x; in[1] = y; in[2] = z; in[3] = vx; in[4] = vy; in[5] = vz; in[6] = m;
        out[0] = ax; out[1] = ay; out[2] = az;
        if (ts) { c->ts = NULL; PyEval_RestoreThread(ts); }
        memset(args, 0, sizeof args);
        args[0] = PyFloat_FromDouble((double)t);
        for (i = 0; i < 7; ++i) args[1 + i] = nbpy_view_get(c, in[i], n, 0);
        for (i = 0; i < 3; ++i) args[8 + i] = nbpy_view_get(c, out[i], n, 1);
        for (i = 0; i < 11; ++i) ok = ok && args[i];
        if (ok) {
            nbpy_trampoline(c, c->extra_force, args, 11, &truth);
        } else {
            PyErr_Fetch(&c->exc_type, &c->exc_value, &c->exc_tb);
        }
        for (i = 0; i < 11; ++i) Py_XDECREF(args[i]);
        nbpy_views_settle(c);
        if (ts) c->ts = PyEval_SaveThread();
    }
    if (c->exc_type)   /* NaN: the library refuses the step and keeps the last good state */
        for (k = 0; k < n; ++k) ax[k] = ay[k] = az[k] = (nbody_real)NAN;
}

static int nbpy_hook(nbpy_ctx *c, PyObject *fn) {
    PyObject *args[1];
    int truth;
    args[0] = c->owner;
    if (nbpy_trampoline(c, fn, args, 1, &truth) < 0) return 1;
    return truth;
}
static int nbpy_before_step(nbody_sim *sim, void *user_data) {
    (void)sim;
    return nbpy_hook((nbpy_ctx *)user_data, ((nbpy_ctx *)user_data)->before_step);
}
static int nbpy_after_step(nbody_sim *sim, void *user_data) {
    (void)sim;
    return nbpy_hook((nbpy_ctx *)user_data, ((nbpy_ctx *)user_data)->after_step);
}

static PyTypeObject nbpy_ProgressType;   /* a struct sequence, defined with the others below */

static PyObject *nbpy_progress_info(const nbody_progress_info *info) {
    PyObject *p = PyStructSequence_New(&nbpy_ProgressType);
    if (!p) return NULL;
    PyStructSequence_SET_ITEM(p, 0, PyFloat_FromDouble((double)info->t));
    PyStructSequence_SET_ITEM(p, 1, PyFloat_FromDouble((double)info->t_start));
    PyStructSequence_SET_ITEM(p, 2, PyFloat_FromDouble((double)info->t_end));
    PyStructSequence_SET_ITEM(p, 3, PyFloat_FromDouble((double)info->dt));
    PyStructSequence_SET_ITEM(p, 4, PyLong_FromUnsignedLongLong(info->steps));
    PyStructSequence_SET_ITEM(p, 5, PyLong_FromUnsignedLongLong(info->rejected));
    PyStructSequence_SET_ITEM(p, 6, PyFloat_FromDouble(info->elapsed));
    if (PyErr_Occurred()) { Py_DECREF(p); return NULL; }
    return p;
}

/* Every advance runs with this heartbeat (every NBPY_SIGNAL_SECONDS at most), so Ctrl-C and
   Jupyter's stop button reach the run: PyErr_CheckSignals with the GIL taken for a moment. */
#define NBPY_SIGNAL_SECONDS 0.05
#define NBPY_BAR_SECONDS 0.1
static int nbpy_call_progress(nbpy_ctx *c, const nbody_progress_info *info) {
    PyObject *args[1];
    int truth;
    int user_due = c->progress &&
                   (c->progress_interval > 0 ? info->elapsed - c->progress_last >= c->progress_interval
                                             : info->steps != c->progress_steps);
    int bar_due = c->bar && info->elapsed - c->bar_last >= NBPY_BAR_SECONDS;
    if (!user_due && !bar_due) return 0;
    args[0] = nbpy_progress_info(info);
    if (!args[0]) return -1;
    if (user_due) {
        c->progress_last = info->elapsed;
        c->progress_steps = info->steps;
        if (nbpy_trampoline(c, c->progress, args, 1, &truth) < 0) { Py_DECREF(args[0]); return -1; }
        if (truth) c->stop_requested = 1;
    }
    if (bar_due) {
        c->bar_last = info->elapsed;
        if (nbpy_trampoline(c, c->bar, args, 1, &truth) < 0) { Py_DECREF(args[0]); return -1; }
    }
    Py_DECREF(args[0]);
    return 0;
}

static int nbpy_progress(const nbody_progress_info *info, void *user_data) {
    nbpy_ctx *c = (nbpy_ctx *)user_data;
    PyThreadState *ts = c->ts;
    int rc;
    if (c->exc_type || c->stop_requested) return 1;
    if (ts) { c->ts = NULL; PyEval_RestoreThread(ts); }
    rc = PyErr_CheckSignals() < 0 ? -1 : nbpy_call_progress(c, info);
    if (rc < 0 && PyErr_Occurred() && !c->exc_type) PyErr_Fetch(&c->exc_type, &c->exc_value, &c->exc_tb);
    if (ts) c->ts = PyEval_SaveThread();
    return c->exc_type || c->stop_requested;
}

/* ==== names: enum fields by the C name in lower case without its prefix ===================== */
typedef struct nbpy_enum { const char *field; const char *const *names; int count; } nbpy_enum;
static const char *const nbpy_traversal_names[] = {"default", "stack", "stackless"};
static const char *const nbpy_order_names[] = {"default", "body", "leaf"};
static const char *const nbpy_radau_names[] = {"prs23", "global", "fixed"};
static const char *const nbpy_simd_names[] = {"default", "portable", "avx2", "avx512"};
static const char *const nbpy_whfast_names[] = {"jacobi", "democratic_heliocentric"};
static const char *const nbpy_collision_names[] = {"none", "merge", "bounce", "stop"};
static const char *const nbpy_stepping_names[] = {"default", "shared", "block"};
static const char *const nbpy_event_names[] = {"none", "close_encounter", "escape", "collision", "hook"};
static const char *const nbpy_anomaly_names[] = {"true", "mean"};
/* engine and method names come from nbody_engine_name / nbody_method_name ('-' read as '_') */
static const char *nbpy_engine_names[NBODY_ENGINE_COUNT_];
static const char *nbpy_method_names[NBODY_METHOD_COUNT_];
static char nbpy_name_store[NBODY_ENGINE_COUNT_ + NBODY_METHOD_COUNT_][32];

static void nbpy_names_init(void) {
    int i, k = 0;
    char *p;
    for (i = 0; i < NBODY_ENGINE_COUNT_; ++i, ++k) {
        strncpy(nbpy_name_store[k], nbody_engine_name((nbody_engine)i), 31);
        for (p = nbpy_name_store[k]; *p; ++p) if (*p == '-') *p = '_';
        nbpy_engine_names[i] = nbpy_name_store[k];
    }
    for (i = 0; i < NBODY_METHOD_COUNT_; ++i, ++k) {
        strncpy(nbpy_name_store[k], nbody_method_name((nbody_method)i), 31);
        for (p = nbpy_name_store[k]; *p; ++p) if (*p == '-') *p = '_';
        nbpy_method_names[i] = nbpy_name_store[k];
    }
}

/* a name (or an int in range) -> the enum value; -1 with ValueError naming the choices */
static int nbpy_enum_value(PyObject *v, const char *field, const char *const *names, int count) {
    int i;
    if (PyLong_Check(v)) {
        long k = PyLong_AsLong(v);
        if (k >= 0 && k < count) return (int)k;
    } else if (PyUnicode_Check(v)) {
        const char *s = PyUnicode_AsUTF8(v);
        char low[64];
        size_t j;
        if (!s) return -1;
        for (j = 0; s[j] && j < sizeof low - 1; ++j)
            low[j] = s[j] == '-' ? '_' : (char)((s[j] >= 'A' && s[j] <= 'Z') ? s[j] + 32 : s[j]);
        low[j] = 0;
        for (i = 0; i < count; ++i) if (!strcmp(low, names[i])) return i;
    } else {
        PyErr_Format(PyExc_TypeError, "%s must be a name (str), not %.80s", field, Py_TYPE(v)->tp_name);
        return -1;
    }
    {
        PyObject *choices = PyUnicode_FromString("");
        for (i = 0; choices && i < count; ++i)
            Py_SETREF(choices, PyUnicode_FromFormat("%U%s'%s'", choices, i ? ", " : "", names[i]));
        if (choices) {
            PyErr_Format(PyExc_ValueError, "%s = %R is not one of %U", field, v, choices);
            Py_DECREF(choices);
        }
    }
    return -1;
}

/* ==== nbody_desc from keywords: every field by its C name ==================================== */
typedef enum { NBPY_F_ENUM, NBPY_F_INT, NBPY_F_REAL, NBPY_F_SIZE } nbpy_kind;
typedef struct nbpy_field { const char *name; nbpy_kind kind; size_t offset; const char *const *names; int count; } nbpy_field;
#define NBPY_FIELD(f, k) {#f, k, offsetof(nbody_desc, f), NULL, 0}
#define NBPY_ENUM(f, tab, n) {#f, NBPY_F_ENUM, offsetof(nbody_desc, f), tab, n}
static nbpy_field nbpy_fields[] = {
    NBPY_ENUM(engine, nbpy_engine_names, NBODY_ENGINE_COUNT_),
    NBPY_ENUM(method, nbpy_method_names, NBODY_METHOD_COUNT_),
    NBPY_FIELD(order, NBPY_F_INT), NBPY_FIELD(G, NBPY_F_REAL), NBPY_FIELD(softening, NBPY_F_REAL),
    NBPY_FIELD(dt, NBPY_F_REAL), NBPY_FIELD(tolerance, NBPY_F_REAL), NBPY_FIELD(dt_min, NBPY_F_REAL),
    NBPY_FIELD(dt_max, NBPY_F_REAL), NBPY_FIELD(theta, NBPY_F_REAL),
    NBPY_ENUM(traversal, nbpy_traversal_names, NBODY_TRAVERSAL_COUNT_),
    NBPY_ENUM(visit_order, nbpy_order_names, NBODY_ORDER_COUNT_),
    NBPY_FIELD(block_size, NBPY_F_INT), NBPY_FIELD(threads, NBPY_F_INT), NBPY_FIELD(device, NBPY_F_INT),
    NBPY_FIELD(compensated, NBPY_F_INT), NBPY_FIELD(quadrupole, NBPY_F_INT), NBPY_FIELD(leaf_size, NBPY_F_INT),
    NBPY_FIELD(n_active, NBPY_F_SIZE), NBPY_FIELD(extra_force_velocity_free, NBPY_F_INT),
    NBPY_ENUM(collision, nbpy_collision_names, NBODY_COLLISION_COUNT_),
    NBPY_FIELD(restitution, NBPY_F_REAL), NBPY_FIELD(stop_distance, NBPY_F_REAL),
    NBPY_FIELD(escape_distance, NBPY_F_REAL),
    NBPY_ENUM(radau_control, nbpy_radau_names, NBODY_RADAU_CONTROL_COUNT_),
    NBPY_ENUM(simd, nbpy_simd_names, NBODY_SIMD_COUNT_),
    NBPY_FIELD(devices, NBPY_F_INT),
    NBPY_ENUM(whfast_coordinates, nbpy_whfast_names, NBODY_WHFAST_COORDINATES_COUNT_),
    NBPY_FIELD(whfast_corrector, NBPY_F_INT),
    NBPY_ENUM(stepping, nbpy_stepping_names, NBODY_STEPPING_COUNT_),
    NBPY_FIELD(timestep_eta, NBPY_F_REAL),
};
#define NBPY_NFIELDS (sizeof nbpy_fields / sizeof nbpy_fields[0])
/* the callable fields, and the C-only ones that Python replaces (closures carry user data) */
static const char *const nbpy_c_only_fields[] = {"extra_force_user_data", "hook_user_data", "allocator", "mpi_comm"};

static int nbpy_set_field(nbody_desc *d, const nbpy_field *f, PyObject *v) {
    char *at = (char *)d + f->offset;
    if (f->kind == NBPY_F_ENUM) {
        int e = nbpy_enum_value(v, f->name, f->names, f->count);
        if (e < 0) return -1;
        memcpy(at, &e, sizeof e);   /* the desc's enums are int-sized (checked at import) */
    } else if (f->kind == NBPY_F_REAL) {
        double x = PyFloat_AsDouble(v);
        nbody_real r = (nbody_real)x;
        if (x == -1.0 && PyErr_Occurred()) return -1;
        memcpy(at, &r, sizeof r);
    } else {
        long long k;
        if (PyBool_Check(v) || PyLong_Check(v) || PyIndex_Check(v)) k = PyLong_AsLongLong(v);
        else { PyErr_Format(PyExc_TypeError, "%s must be an integer, not %.80s", f->name, Py_TYPE(v)->tp_name); return -1; }
        if (k == -1 && PyErr_Occurred()) return -1;
        if (f->kind == NBPY_F_INT) {
            int i = (int)k;
            if ((long long)i != k) { PyErr_Format(PyExc_ValueError, "%s = %lld is out of range", f->name, k); return -1; }
            memcpy(at, &i, sizeof i);
        } else {
            size_t z = (size_t)k;
            if (k < 0) { PyErr_Format(PyExc_ValueError, "%s = %lld must be >= 0", f->name, k); return -1; }
            memcpy(at, &z, sizeof z);
        }
    }
    return 0;
}

static PyObject *nbpy_field_value(const nbody_desc *d, const nbpy_field *f) {
    const char *at = (const char *)d + f->offset;
    if (f->kind == NBPY_F_ENUM) {
        int e;
        memcpy(&e, at, sizeof e);
        return PyUnicode_FromString(e >= 0 && e < f->count ? f->names[e] : "unknown");
    }
    if (f->kind == NBPY_F_REAL) { nbody_real r; memcpy(&r, at, sizeof r); return PyFloat_FromDouble((double)r); }
    if (f->kind == NBPY_F_INT) { int i; memcpy(&i, at, sizeof i); return PyLong_FromLong(i); }
    { size_t z; memcpy(&z, at, sizeof z); return PyLong_FromSize_t(z); }
}

static void nbpy_ctx_release(nbpy_ctx *c) {
    nbpy_views_clear(c);
    Py_CLEAR(c->extra_force); Py_CLEAR(c->before_step); Py_CLEAR(c->after_step);
    Py_CLEAR(c->progress); Py_CLEAR(c->log); Py_CLEAR(c->bar);
    Py_CLEAR(c->exc_type); Py_CLEAR(c->exc_value); Py_CLEAR(c->exc_tb);
}

static int nbpy_ctx_callable(PyObject **slot, PyObject *v, const char *name) {
    if (v == Py_None) { Py_CLEAR(*slot); return 0; }
    if (!PyCallable_Check(v)) {
        PyErr_Format(PyExc_TypeError, "%s must be callable or None, not %.80s", name, Py_TYPE(v)->tp_name);
        return -1;
    }
    Py_INCREF(v);
    Py_XSETREF(*slot, v);
    return 0;
}

/* Fills d from keywords (the C names; progress_interval: seconds between progress calls)
   and c with the callables; installs the trampolines, the log hook and the counting
   allocator. Unknown keywords raise TypeError naming them. */
static int nbpy_desc_from_kwargs(nbody_desc *d, nbpy_ctx *c, PyObject *kwargs) {
    Py_ssize_t pos = 0;
    PyObject *key, *v;
    size_t i;
    memset(d, 0, sizeof *d);
    c->progress_interval = 0;
    while (kwargs && PyDict_Next(kwargs, &pos, &key, &v)) {
        const char *name = PyUnicode_AsUTF8(key);
        int done = 0;
        if (!name) return -1;
        for (i = 0; i < NBPY_NFIELDS && !done; ++i)
            if (!strcmp(name, nbpy_fields[i].name)) {
                if (nbpy_set_field(d, &nbpy_fields[i], v) < 0) return -1;
                done = 1;
            }
        if (done) continue;
        if (!strcmp(name, "extra_force")) done = nbpy_ctx_callable(&c->extra_force, v, name) < 0 ? -1 : 1;
        else if (!strcmp(name, "before_step")) done = nbpy_ctx_callable(&c->before_step, v, name) < 0 ? -1 : 1;
        else if (!strcmp(name, "after_step")) done = nbpy_ctx_callable(&c->after_step, v, name) < 0 ? -1 : 1;
        else if (!strcmp(name, "progress")) done = nbpy_ctx_callable(&c->progress, v, name) < 0 ? -1 : 1;
        else if (!strcmp(name, "log")) done = nbpy_ctx_callable(&c->log, v, name) < 0 ? -1 : 1;
        else if (!strcmp(name, "progress_interval")) {
            c->progress_interval = PyFloat_AsDouble(v);
            if (c->progress_interval == -1.0 && PyErr_Occurred()) return -1;
            if (!(c->progress_interval >= 0 && c->progress_interval < 1e300)) {
                PyErr_Format(PyExc_ValueError, "progress_interval = %R must be finite and >= 0", v);
                return -1;
            }
            done = 1;
        }
        if (done < 0) return -1;
        if (done) continue;
        for (i = 0; i < sizeof nbpy_c_only_fields / sizeof nbpy_c_only_fields[0]; ++i)
            if (!strcmp(name, nbpy_c_only_fields[i])) {
                if (v == Py_None) { done = 1; break; }
                if (!strcmp(name, "mpi_comm")) {
                    PyErr_SetString(nbpy_UnavailableError, "mpi_comm: the Python package is built without MPI");
                } else {
                    PyErr_Format(PyExc_TypeError, "%s is C-only: in Python a closure or a bound method carries its "
                                 "data, and the package installs its own allocator", name);
                }
                return -1;
            }
        if (done) continue;
        PyErr_Format(PyExc_TypeError, "unknown nbody_desc field %R (see help(nbodyh.Simulation))", key);
        return -1;
    }
    if (c->extra_force) { d->extra_force = nbpy_extra_force; d->extra_force_user_data = c; }
    if (c->before_step) d->before_step = nbpy_before_step;
    if (c->after_step) d->after_step = nbpy_after_step;
    d->hook_user_data = c;
    d->progress.func = nbpy_progress;
    d->progress.user_data = c;
    /* the heartbeat of every advance: the user's interval when shorter than the signal
       check's (a positive interval is checked after rejected steps too) */
    d->progress.interval = NBPY_SIGNAL_SECONDS;
    if (c->progress && c->progress_interval < d->progress.interval)
        d->progress.interval = c->progress_interval > 0 ? c->progress_interval : 1e-300;
    d->log.func = nbpy_log_hook;
    d->log.user_data = c;
    d->allocator.alloc = nbpy_desc_alloc;
    d->allocator.free = nbpy_desc_free;
    return 0;
}

/* ==== struct sequences: Stats, Invariants, Event, Orbit, Progress ============================ */
static PyTypeObject nbpy_StatsType, nbpy_InvariantsType, nbpy_EventType, nbpy_OrbitType;

static PyStructSequence_Field nbpy_stats_fields[] = {
    {"t", "current time"}, {"dt", "size of the last step"}, {"steps", "accepted steps since creation"},
    {"rejected", "rejected steps (adaptive methods)"}, {"force_evals", "force evaluations"}, {NULL, NULL}};
static PyStructSequence_Desc nbpy_stats_desc = {"nbodyh.Stats", "Counters of a Simulation (nbody_stats).", nbpy_stats_fields, 5};

static PyStructSequence_Field nbpy_inv_fields[] = {
    {"mass", "total mass"}, {"kinetic", "kinetic energy"}, {"potential", "potential energy (softened)"},
    {"energy", "kinetic + potential"}, {"px", "momentum x"}, {"py", "momentum y"}, {"pz", "momentum z"},
    {"lx", "angular momentum x (about the origin)"}, {"ly", "angular momentum y"}, {"lz", "angular momentum z"},
    {"cx", "centre of mass x"}, {"cy", "centre of mass y"}, {"cz", "centre of mass z"}, {NULL, NULL}};
static PyStructSequence_Desc nbpy_inv_desc = {"nbodyh.Invariants",
    "Conserved quantities of a System (nbody_invariants), compensated sums.", nbpy_inv_fields, 13};

static PyStructSequence_Field nbpy_event_fields[] = {
    {"kind", "'none', 'close_encounter', 'escape', 'collision' or 'hook'"}, {"i", "first body"},
    {"j", "second body (close encounters and collisions)"}, {"t", "time of the step"},
    {"distance", "distance between i and j, or of i from the origin"},
    {"merges", "collisions merged since creation"}, {"bounces", "collisions bounced since creation"}, {NULL, NULL}};
static PyStructSequence_Desc nbpy_event_desc = {"nbodyh.Event",
    "The event that stopped a run (nbody_event); advance returns it.", nbpy_event_fields, 7};

static PyStructSequence_Field nbpy_orbit_fields[] = {
    {"a", "semi-major axis (< 0 hyperbolic)"}, {"e", "eccentricity"}, {"inc", "inclination, 0..pi"},
    {"Omega", "longitude of the ascending node"}, {"omega", "argument of pericentre"},
    {"f", "true anomaly"}, {"M", "mean anomaly"}, {NULL, NULL}};
static PyStructSequence_Desc nbpy_orbit_desc = {"nbodyh.Orbit",
    "Orbital elements (nbody_orbit), angles in radians. Orbit((a, e, inc, Omega, omega, f, M)).",
    nbpy_orbit_fields, 7};

static PyStructSequence_Field nbpy_progress_fields[] = {
    {"t", "time of the last accepted step"}, {"t_start", "where this advance began"},
    {"t_end", "where this advance lands"}, {"dt", "size of the last accepted step"},
    {"steps", "accepted steps since creation"}, {"rejected", "rejected steps since creation"},
    {"elapsed", "wall-clock seconds since this advance began"}, {NULL, NULL}};
static PyStructSequence_Desc nbpy_progress_desc = {"nbodyh.Progress",
    "What a progress callback receives (nbody_progress_info).", nbpy_progress_fields, 7};

static PyObject *nbpy_seq(PyTypeObject *type, const double *v, int n) {
    PyObject *o = PyStructSequence_New(type);
    int i;
    if (!o) return NULL;
    for (i = 0; i < n; ++i) PyStructSequence_SET_ITEM(o, i, PyFloat_FromDouble(v[i]));
    if (PyErr_Occurred()) { Py_DECREF(o); return NULL; }
    return o;
}

static PyObject *nbpy_orbit_object(const nbody_orbit *o) {
    double v[7];
    v[0] = (double)o->a; v[1] = (double)o->e; v[2] = (double)o->inc; v[3] = (double)o->Omega;
    v[4] = (double)o->omega; v[5] = (double)o->f; v[6] = (double)o->M;
    return nbpy_seq(&nbpy_OrbitType, v, 7);
}

/* an Orbit, or any sequence of 7 numbers, or fewer (the rest 0) */
static int nbpy_orbit_from(PyObject *v, nbody_orbit *o) {
    PyObject *seq = PySequence_Fast(v, "orbit must be an nbodyh.Orbit or a sequence (a, e, inc, Omega, omega, f, M)");
    double x[7] = {0, 0, 0, 0, 0, 0, 0};
    Py_ssize_t n, i;
    if (!seq) return -1;
    n = PySequence_Fast_GET_SIZE(seq);
    if (n < 1 || n > 7) { Py_DECREF(seq); PyErr_SetString(PyExc_ValueError, "orbit needs 1 to 7 elements (a, e, inc, Omega, omega, f, M)"); return -1; }
    for (i = 0; i < n; ++i) {
        x[i] = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(seq, i));
        if (x[i] == -1.0 && PyErr_Occurred()) { Py_DECREF(seq); return -1; }
    }
    Py_DECREF(seq);
    o->a = (nbody_real)x[0]; o->e = (nbody_real)x[1]; o->inc = (nbody_real)x[2]; o->Omega = (nbody_real)x[3];
    o->omega = (nbody_real)x[4]; o->f = (nbody_real)x[5]; o->M = (nbody_real)x[6];
    return 0;
}

/* ==== System ================================================================================ */
typedef struct {
    PyObject_HEAD
    nbody_system s;               /* one block the package's allocator owns; n >= 1 */
} nbpy_System;
static PyTypeObject nbpy_SystemType;
static PyTypeObject *nbpy_system_class = &nbpy_SystemType;   /* nbodyh.System (a subclass) once registered */
static const char *const nbpy_array_names[7] = {"x", "y", "z", "vx", "vy", "vz", "m"};

static nbody_real **nbpy_system_field(nbody_system *s, int k) {
    nbody_real **f[7];
    f[0] = &s->x; f[1] = &s->y; f[2] = &s->z; f[3] = &s->vx; f[4] = &s->vy; f[5] = &s->vz; f[6] = &s->m;
    return f[k];
}

/* a new System object taking over s (which is zeroed); NULL (s freed) on failure */
static PyObject *nbpy_system_wrap(nbody_system *s) {
    nbpy_System *o = (nbpy_System *)nbpy_system_class->tp_alloc(nbpy_system_class, 0);
    if (!o) { nbody_system_free(s); return NULL; }
    o->s = *s;
    memset(s, 0, sizeof *s);
    return (PyObject *)o;
}

static PyObject *nbpy_system_new_n(size_t n) {
    nbody_system s;
    nbody_result r;
    memset(&s, 0, sizeof s);
    r = nbody_system_alloc(&s, n);
    if (r != NBODY_OK) return nbpy_raise(r, NULL, "System");
    return nbpy_system_wrap(&s);
}

static int nbpy_system_check(PyObject *o) {
    if (!PyObject_TypeCheck(o, &nbpy_SystemType)) {
        PyErr_Format(PyExc_TypeError, "expected an nbodyh.System, got %.80s", Py_TYPE(o)->tp_name);
        return -1;
    }
    return 0;
}

static void nbpy_system_dealloc(nbpy_System *self) {
    nbody_system_free(&self->s);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* System(x=, y=, z=, vx=, vy=, vz=, m=, t=0.0) or System(n): copies the arrays in once */
static PyObject *nbpy_system_tp_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static char *kw[] = {"n", "x", "y", "z", "vx", "vy", "vz", "m", "t", NULL};
    PyObject *in[7] = {NULL, NULL, NULL, NULL, NULL, NULL, NULL}, *arr[7] = {NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    Py_ssize_t n = -1;
    double t = 0;
    nbpy_System *o;
    int k;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|n$OOOOOOOd:System", kw, &n, &in[0], &in[1], &in[2], &in[3],
                                     &in[4], &in[5], &in[6], &t))
        return NULL;
    for (k = 0; k < 7; ++k) {
        if (!in[k]) continue;
        arr[k] = PyArray_FROMANY(in[k], NBPY_NPY_REAL, 0, 1, NPY_ARRAY_CARRAY_RO | NPY_ARRAY_FORCECAST);
        if (!arr[k]) goto fail;
        if (PyArray_NDIM((PyArrayObject *)arr[k]) == 0) {   /* a scalar: every body the same */
            if (n < 0 && k == 6 && !in[0]) { PyErr_SetString(PyExc_ValueError, "System: give n or arrays"); goto fail; }
            continue;
        }
        if (n < 0) n = PyArray_DIM((PyArrayObject *)arr[k], 0);
        else if (PyArray_DIM((PyArrayObject *)arr[k], 0) != n) {
            PyErr_Format(PyExc_ValueError, "System: %s has %zd values, expected %zd", nbpy_array_names[k],
                         (Py_ssize_t)PyArray_DIM((PyArrayObject *)arr[k], 0), n);
            goto fail;
        }
    }
    if (n < 1) { PyErr_Format(PyExc_ValueError, "System: n = %zd, need at least one body (give n or arrays)", n); goto fail; }
    o = (nbpy_System *)type->tp_alloc(type, 0);
    if (!o) goto fail;
    if (nbody_system_alloc(&o->s, (size_t)n) != NBODY_OK) { Py_DECREF(o); PyErr_NoMemory(); goto fail; }
    o->s.t = (nbody_real)t;
    for (k = 0; k < 7; ++k) {
        nbody_real *dst = *nbpy_system_field(&o->s, k);
        Py_ssize_t i;
        if (!arr[k]) continue;
        if (PyArray_NDIM((PyArrayObject *)arr[k]) == 0)
            for (i = 0; i < n; ++i) dst[i] = *(const nbody_real *)PyArray_DATA((PyArrayObject *)arr[k]);
        else
            memcpy(dst, PyArray_DATA((PyArrayObject *)arr[k]), (size_t)n * sizeof(nbody_real));
        Py_DECREF(arr[k]);
    }
    return (PyObject *)o;
fail:
    for (k = 0; k < 7; ++k) Py_XDECREF(arr[k]);
    return NULL;
}

static PyObject *nbpy_system_get_array(nbpy_System *self, void *closure) {
    return nbpy_real_array(*nbpy_system_field(&self->s, (int)(Py_intptr_t)closure), self->s.n, 1, (PyObject *)self);
}

static int nbpy_system_set_array(nbpy_System *self, PyObject *v, void *closure) {
    PyObject *view, *src;
    int rc;
    if (!v) { PyErr_SetString(PyExc_AttributeError, "a System's arrays cannot be deleted"); return -1; }
    view = nbpy_system_get_array(self, closure);
    if (!view) return -1;
    src = PyArray_FROMANY(v, NBPY_NPY_REAL, 0, 1, NPY_ARRAY_FORCECAST);
    rc = src ? PyArray_CopyInto((PyArrayObject *)view, (PyArrayObject *)src) : -1;   /* broadcasts scalars */
    Py_XDECREF(src);
    Py_DECREF(view);
    return rc;
}

static PyObject *nbpy_system_get_t(nbpy_System *self, void *c) { (void)c; return PyFloat_FromDouble((double)self->s.t); }
static int nbpy_system_set_t(nbpy_System *self, PyObject *v, void *c) {
    double t;
    (void)c;
    if (!v) { PyErr_SetString(PyExc_AttributeError, "t cannot be deleted"); return -1; }
    t = PyFloat_AsDouble(v);
    if (t == -1.0 && PyErr_Occurred()) return -1;
    self->s.t = (nbody_real)t;
    return 0;
}
static PyObject *nbpy_system_get_n(nbpy_System *self, void *c) { (void)c; return PyLong_FromSize_t(self->s.n); }
static Py_ssize_t nbpy_system_len(nbpy_System *self) { return (Py_ssize_t)self->s.n; }

static PyObject *nbpy_system_copy(nbpy_System *self, PyObject *unused) {
    nbpy_System *o;
    (void)unused;
    o = (nbpy_System *)nbpy_system_new_n(self->s.n);
    if (!o) return NULL;
    nbody_system_copy(&o->s, &self->s);
    return (PyObject *)o;
}

static PyObject *nbpy_system_move_to_com(nbpy_System *self, PyObject *unused) {
    nbody_result r = nbody_move_to_com(&self->s);
    (void)unused;
    if (r != NBODY_OK) return nbpy_raise(r, NULL, "move_to_com");
    Py_RETURN_NONE;
}

/* The file functions of a System (nbody_save, nbody_write_csv, nbody_load): the path as bytes
   (os.PathLike and str), the call, and its result raised with the path, in one place */
enum { NBPY_FILE_SAVE, NBPY_FILE_CSV, NBPY_FILE_LOAD };
static int nbpy_system_file(int what, PyObject *path, nbody_system *s) {
    PyObject *b;
    nbody_result r;
    if (!PyUnicode_FSConverter(path, &b)) return -1;
    r = what == NBPY_FILE_SAVE ? nbody_save(PyBytes_AS_STRING(b), s)
        : what == NBPY_FILE_CSV ? nbody_write_csv(PyBytes_AS_STRING(b), s) : nbody_load(PyBytes_AS_STRING(b), s);
    if (r != NBODY_OK) nbpy_raise(r, NULL, PyBytes_AS_STRING(b));
    Py_DECREF(b);
    return r == NBODY_OK ? 0 : -1;
}

static PyObject *nbpy_system_save(nbpy_System *self, PyObject *path) {
    if (nbpy_system_file(NBPY_FILE_SAVE, path, &self->s) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *nbpy_system_write_csv(nbpy_System *self, PyObject *path) {
    if (nbpy_system_file(NBPY_FILE_CSV, path, &self->s) < 0) return NULL;
    Py_RETURN_NONE;
}

/* primary: an int, or None for NBODY_JACOBI */
static int nbpy_primary(PyObject *v, size_t *out) {
    Py_ssize_t k;
    if (!v || v == Py_None) { *out = NBODY_JACOBI; return 0; }
    k = PyNumber_AsSsize_t(v, PyExc_OverflowError);
    if (k == -1 && PyErr_Occurred()) return -1;
    if (k < 0) { PyErr_Format(PyExc_ValueError, "primary = %zd must be a body index >= 0 or None (Jacobi)", k); return -1; }
    *out = (size_t)k;
    return 0;
}

static PyObject *nbpy_system_get_orbit(nbpy_System *self, PyObject *args, PyObject *kwargs) {
    static char *kw[] = {"i", "primary", "G", NULL};
    Py_ssize_t i;
    PyObject *prim = Py_None;
    double G = 1;
    size_t p;
    nbody_orbit o;
    nbody_result r;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "n|Od:get_orbit", kw, &i, &prim, &G)) return NULL;
    if (nbpy_primary(prim, &p) < 0) return NULL;
    if (i < 0) { PyErr_Format(PyExc_ValueError, "get_orbit: body %zd out of range", i); return NULL; }
    r = nbody_get_orbit(&self->s, (nbody_real)G, (size_t)i, p, &o);
    if (r != NBODY_OK) return nbpy_raise(r, NULL, "get_orbit");
    return nbpy_orbit_object(&o);
}

static int nbpy_anomaly(PyObject *v, nbody_anomaly *out) {
    int k;
    if (!v) { *out = NBODY_ANOMALY_TRUE; return 0; }
    k = nbpy_enum_value(v, "anomaly", nbpy_anomaly_names, 2);
    if (k < 0) return -1;
    *out = (nbody_anomaly)k;
    return 0;
}

static PyObject *nbpy_system_add_orbit(nbpy_System *self, PyObject *args, PyObject *kwargs) {
    static char *kw[] = {"m", "orbit", "primary", "G", "anomaly", NULL};
    double m, G = 1;
    PyObject *orb, *prim = Py_None, *anom = NULL, *out;
    nbody_orbit o;
    nbody_anomaly an;
    nbody_system s;
    size_t p;
    nbody_result r;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "dO|OdO:add_orbit", kw, &m, &orb, &prim, &G, &anom)) return NULL;
    if (nbpy_orbit_from(orb, &o) < 0 || nbpy_primary(prim, &p) < 0 || nbpy_anomaly(anom, &an) < 0) return NULL;
    /* a new System (n + 1): this one keeps its size, so views of it stay valid */
    memset(&s, 0, sizeof s);
    if ((r = nbody_system_alloc(&s, self->s.n)) != NBODY_OK) return nbpy_raise(r, NULL, "add_orbit");
    nbody_system_copy(&s, &self->s);
    r = nbody_add_orbit(&s, (nbody_real)G, (nbody_real)m, &o, an, p);
    if (r != NBODY_OK) { nbody_system_free(&s); return nbpy_raise(r, NULL, "add_orbit"); }
    out = nbpy_system_wrap(&s);
    return out;
}

static PyObject *nbpy_system_repr(nbpy_System *self) {
    double mass = 0;
    size_t i;
    char bm[40], bt[40];
    for (i = 0; i < self->s.n; ++i) mass += (double)self->s.m[i];
    return PyUnicode_FromFormat("<nbodyh.System: %zu bodies, total mass %s, t = %s>", self->s.n,
                                nbpy_fmt(mass, bm, sizeof bm), nbpy_fmt((double)self->s.t, bt, sizeof bt));
}

static PyGetSetDef nbpy_system_getset[] = {
    {"x", (getter)nbpy_system_get_array, (setter)nbpy_system_set_array, "positions x (numpy view, writable; assigning copies into it)", (void *)0},
    {"y", (getter)nbpy_system_get_array, (setter)nbpy_system_set_array, "positions y (numpy view)", (void *)1},
    {"z", (getter)nbpy_system_get_array, (setter)nbpy_system_set_array, "positions z (numpy view)", (void *)2},
    {"vx", (getter)nbpy_system_get_array, (setter)nbpy_system_set_array, "velocities x (numpy view)", (void *)3},
    {"vy", (getter)nbpy_system_get_array, (setter)nbpy_system_set_array, "velocities y (numpy view)", (void *)4},
    {"vz", (getter)nbpy_system_get_array, (setter)nbpy_system_set_array, "velocities z (numpy view)", (void *)5},
    {"m", (getter)nbpy_system_get_array, (setter)nbpy_system_set_array, "masses (numpy view)", (void *)6},
    {"t", (getter)nbpy_system_get_t, (setter)nbpy_system_set_t, "simulation time", NULL},
    {"n", (getter)nbpy_system_get_n, NULL, "number of bodies (fixed for the System's life)", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyMethodDef nbpy_system_methods[] = {
    {"copy", (PyCFunction)nbpy_system_copy, METH_NOARGS,
     "copy()\n--\n\nA new System with the same bodies and time (its own memory)."},
    {"move_to_com", (PyCFunction)nbpy_system_move_to_com, METH_NOARGS,
     "move_to_com()\n--\n\nShift positions and velocities in place so that the centre of mass is at rest at the "
     "origin (nbody_move_to_com)."},
    {"save", (PyCFunction)nbpy_system_save, METH_O,
     "save(path)\n--\n\nWrite the System to a binary snapshot with a checksum (nbody_save); "
     "nbodyh.load(path) reads it back.\n\nRaises\n------\nOSError\n    The file cannot be written."},
    {"write_csv", (PyCFunction)nbpy_system_write_csv, METH_O,
     "write_csv(path)\n--\n\nWrite the bodies as CSV (nbody_write_csv)."},
    {"get_orbit", (PyCFunction)(void (*)(void))nbpy_system_get_orbit, METH_VARARGS | METH_KEYWORDS,
     "get_orbit(i, primary=None, G=1.0)\n--\n\nOrbital elements of body i (nbody_get_orbit).\n\n"
     "Parameters\n----------\ni : int\n    The body (>= 1 with primary None).\nprimary : int or None\n"
     "    The body it orbits; None: the centre of mass of bodies 0..i-1 (Jacobi).\nG : float\n"
     "    Gravitational constant.\n\nReturns\n-------\nOrbit\n    (a, e, inc, Omega, omega, f, M), angles in radians."},
    {"add_orbit", (PyCFunction)(void (*)(void))nbpy_system_add_orbit, METH_VARARGS | METH_KEYWORDS,
     "add_orbit(m, orbit, primary=None, G=1.0, anomaly='true')\n--\n\nA NEW System with one more body of mass m on "
     "`orbit` (nbody_add_orbit).\n\nSystems keep their size for life (numpy views of them stay valid), so "
     "this returns a new one: ``s = s.add_orbit(1e-3, (5.2, 0.05))``.\n\nParameters\n----------\nm : float\n"
     "orbit : Orbit or sequence\n    (a, e, inc, Omega, omega, f, M); missing trailing elements are 0.\n"
     "primary : int or None\n    The body it orbits; None: the centre of mass of all bodies (Jacobi).\n"
     "G : float\nanomaly : {'true', 'mean'}\n    Which anomaly places the body (f or M)."},
    {NULL, NULL, 0, NULL}};

static PySequenceMethods nbpy_system_as_sequence = {(lenfunc)nbpy_system_len, 0, 0, 0, 0, 0, 0, 0, 0, 0};

static PyTypeObject nbpy_SystemType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    "nbodyh._nbodyh.System",
};

/* ==== Simulation ============================================================================ */
typedef struct {
    PyObject_HEAD
    nbody_sim *sim;
    nbody_desc desc;              /* as given (the library fills the defaults in its copy) */
    nbpy_ctx ctx;
    unsigned long busy_thread;    /* the thread inside step/advance, 0 = none */
    int in_call;                  /* step/advance running (hooks may run on that thread) */
    PyObject *weakrefs;
} nbpy_Sim;
static PyTypeObject nbpy_SimType;
static PyTypeObject *nbpy_sim_class = &nbpy_SimType;   /* nbodyh.Simulation once registered */

/* Refuses a call while another thread is inside step/advance (the library allows one thread
   per simulation); the advancing thread's own hooks may read and set the state. */
static int nbpy_sim_ready(nbpy_Sim *self, int stepping) {
    if (!self->sim) { PyErr_SetString(nbpy_Error, "the simulation was not created"); return -1; }
    if (self->in_call) {
        if (self->busy_thread != PyThread_get_thread_ident())
            PyErr_SetString(nbpy_BusyError, "the simulation is busy: another thread is inside step/advance");
        else if (stepping)
            PyErr_SetString(nbpy_BusyError, "step/advance called from the simulation's own callback");
        else
            return 0;
        return -1;
    }
    return 0;
}

static int nbpy_sim_traverse(nbpy_Sim *self, visitproc visit, void *arg) {
    Py_VISIT(self->ctx.extra_force); Py_VISIT(self->ctx.before_step); Py_VISIT(self->ctx.after_step);
    Py_VISIT(self->ctx.progress); Py_VISIT(self->ctx.log); Py_VISIT(self->ctx.bar);
    Py_VISIT(self->ctx.exc_type); Py_VISIT(self->ctx.exc_value); Py_VISIT(self->ctx.exc_tb);
    return 0;
}

static int nbpy_sim_clear(nbpy_Sim *self) {
    nbpy_ctx_release(&self->ctx);
    return 0;
}

static void nbpy_sim_dealloc(nbpy_Sim *self) {
    PyObject_GC_UnTrack(self);
    if (self->weakrefs) PyObject_ClearWeakRefs((PyObject *)self);
    if (self->sim) nbody_destroy(self->sim);
    self->sim = NULL;
    nbpy_sim_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* a new Simulation object whose desc (from kwargs) points at its context; no nbody_sim yet */
static nbpy_Sim *nbpy_sim_alloc(PyTypeObject *type, PyObject *kwargs) {
    nbpy_Sim *o = (nbpy_Sim *)type->tp_alloc(type, 0);
    if (!o) return NULL;
    o->ctx.owner = (PyObject *)o;
    if (nbpy_desc_from_kwargs(&o->desc, &o->ctx, kwargs) < 0) { Py_DECREF(o); return NULL; }
    return o;
}

static PyObject *nbpy_sim_tp_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    PyObject *sys;
    nbpy_Sim *o;
    nbody_result r;
    nbody_sim *sim = NULL;
    if (!PyArg_ParseTuple(args, "O:Simulation", &sys) || nbpy_system_check(sys) < 0) return NULL;
    if (!(o = nbpy_sim_alloc(type, kwargs))) return NULL;
    nbpy_release(&o->ctx);
    r = nbody_create(&sim, &o->desc, &((nbpy_System *)sys)->s);
    nbpy_acquire(&o->ctx);
    if (nbpy_check(&o->ctx, r, "Simulation") < 0) { Py_DECREF(o); return NULL; }
    o->sim = sim;
    return (PyObject *)o;
}

static PyObject *nbpy_event_object(const nbody_event *e) {
    PyObject *o = PyStructSequence_New(&nbpy_EventType);
    if (!o) return NULL;
    PyStructSequence_SET_ITEM(o, 0, PyUnicode_FromString(nbpy_event_names[(int)e->kind <= 4 ? (int)e->kind : 0]));
    PyStructSequence_SET_ITEM(o, 1, PyLong_FromSize_t(e->i));
    PyStructSequence_SET_ITEM(o, 2, PyLong_FromSize_t(e->j));
    PyStructSequence_SET_ITEM(o, 3, PyFloat_FromDouble((double)e->t));
    PyStructSequence_SET_ITEM(o, 4, PyFloat_FromDouble((double)e->distance));
    PyStructSequence_SET_ITEM(o, 5, PyLong_FromUnsignedLongLong(e->merges));
    PyStructSequence_SET_ITEM(o, 6, PyLong_FromUnsignedLongLong(e->bounces));
    if (PyErr_Occurred()) { Py_DECREF(o); return NULL; }
    return o;
}

static PyObject *nbpy_sim_event(nbpy_Sim *self, void *c) {
    nbody_event e;
    (void)c;
    if (nbpy_sim_ready(self, 0) < 0) return NULL;
    nbody_get_event(self->sim, &e);
    return nbpy_event_object(&e);
}

/* step / advance: the GIL released, the busy flag set, the exception a callback saved (or
   the result) raised afterwards; NBODY_STOPPED returns the Event */
static PyObject *nbpy_sim_run(nbpy_Sim *self, int advance, double t_end, PyObject *bar) {
    nbody_result r;
    nbpy_ctx *c = &self->ctx;
    if (nbpy_sim_ready(self, 1) < 0) return NULL;
    self->in_call = 1;
    self->busy_thread = PyThread_get_thread_ident();
    c->stop_requested = 0;
    c->progress_last = c->bar_last = 0;
    c->progress_steps = nbody_get_stats(self->sim).steps;
    Py_XINCREF(bar);
    Py_XSETREF(c->bar, bar);
    nbpy_release(c);
    r = advance ? nbody_advance(self->sim, (nbody_real)t_end) : nbody_step(self->sim);
    nbpy_acquire(c);
    self->in_call = 0;
    self->busy_thread = 0;
    Py_CLEAR(c->bar);
    if (r == NBODY_ERR_CANCELLED && !c->exc_type && c->stop_requested) {
        c->error[0] = 0;
        PyErr_SetString(nbpy_CancelledError, "the progress callback asked to stop; the state is the last accepted step");
        return NULL;
    }
    if (nbpy_check(c, r, advance ? "advance" : "step") < 0) return NULL;
    if (r == NBODY_STOPPED) return nbpy_sim_event(self, NULL);
    Py_RETURN_NONE;
}

static PyObject *nbpy_sim_step(nbpy_Sim *self, PyObject *unused) {
    (void)unused;
    return nbpy_sim_run(self, 0, 0, NULL);
}

/* _advance(t_end, bar): the Python layer's advance passes the progress display or None */
static PyObject *nbpy_sim_advance(nbpy_Sim *self, PyObject *args, PyObject *kwargs) {
    static char *kw[] = {"t_end", "bar", NULL};
    double t_end;
    PyObject *bar = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "d|O:advance", kw, &t_end, &bar)) return NULL;
    if (bar != Py_None && !PyCallable_Check(bar)) { PyErr_SetString(PyExc_TypeError, "bar must be callable"); return NULL; }
    return nbpy_sim_run(self, 1, t_end, bar == Py_None ? NULL : bar);
}

/* the state into an existing System of the right n (no allocation), or a new one */
static PyObject *nbpy_sim_state_into(nbpy_Sim *self, PyObject *out) {
    nbody_result r;
    if (nbpy_sim_ready(self, 0) < 0) return NULL;
    if (out == Py_None) {
        if (!(out = nbpy_system_new_n(nbody_get_n(self->sim)))) return NULL;
    } else {
        if (nbpy_system_check(out) < 0) return NULL;
        if (((nbpy_System *)out)->s.n != nbody_get_n(self->sim)) {
            PyErr_Format(PyExc_ValueError, "get_state: out has %zu bodies, the simulation %zu",
                         ((nbpy_System *)out)->s.n, nbody_get_n(self->sim));
            return NULL;
        }
        Py_INCREF(out);
    }
    r = nbody_get_state(self->sim, &((nbpy_System *)out)->s);
    if (nbpy_check(&self->ctx, r, "get_state") < 0) { Py_DECREF(out); return NULL; }
    return out;
}

static PyObject *nbpy_sim_get_state(nbpy_Sim *self, PyObject *args, PyObject *kwargs) {
    static char *kw[] = {"out", NULL};
    PyObject *out = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:get_state", kw, &out)) return NULL;
    return nbpy_sim_state_into(self, out);
}

static PyObject *nbpy_sim_state(nbpy_Sim *self, void *c) { (void)c; return nbpy_sim_state_into(self, Py_None); }

static PyObject *nbpy_sim_set_state(nbpy_Sim *self, PyObject *sys) {
    nbody_result r;
    if (nbpy_sim_ready(self, 0) < 0 || nbpy_system_check(sys) < 0) return NULL;
    r = nbody_set_state(self->sim, &((nbpy_System *)sys)->s);
    if (nbpy_check(&self->ctx, r, "set_state") < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *nbpy_sim_t(nbpy_Sim *self, void *c) {
    (void)c;
    if (nbpy_sim_ready(self, 0) < 0) return NULL;
    return PyFloat_FromDouble((double)nbody_get_stats(self->sim).t);
}

static PyObject *nbpy_sim_stats(nbpy_Sim *self, void *c) {
    nbody_stats st;
    PyObject *o;
    (void)c;
    if (nbpy_sim_ready(self, 0) < 0) return NULL;
    st = nbody_get_stats(self->sim);
    if (!(o = PyStructSequence_New(&nbpy_StatsType))) return NULL;
    PyStructSequence_SET_ITEM(o, 0, PyFloat_FromDouble((double)st.t));
    PyStructSequence_SET_ITEM(o, 1, PyFloat_FromDouble((double)st.dt));
    PyStructSequence_SET_ITEM(o, 2, PyLong_FromUnsignedLongLong(st.steps));
    PyStructSequence_SET_ITEM(o, 3, PyLong_FromUnsignedLongLong(st.rejected));
    PyStructSequence_SET_ITEM(o, 4, PyLong_FromUnsignedLongLong(st.force_evals));
    if (PyErr_Occurred()) { Py_DECREF(o); return NULL; }
    return o;
}

static PyObject *nbpy_sim_n(nbpy_Sim *self, void *c) {
    (void)c;
    if (nbpy_sim_ready(self, 0) < 0) return NULL;
    return PyLong_FromSize_t(nbody_get_n(self->sim));
}

static PyObject *nbpy_sim_n_active(nbpy_Sim *self, void *c) {
    (void)c;
    if (nbpy_sim_ready(self, 0) < 0) return NULL;
    return PyLong_FromSize_t(nbody_get_n_active(self->sim));
}

static PyObject *nbpy_sim_simd_name(nbpy_Sim *self, void *c) {
    (void)c;
    if (nbpy_sim_ready(self, 0) < 0) return NULL;
    return PyUnicode_FromString(nbody_simd_name(self->sim));
}

static PyObject *nbpy_sim_desc(nbpy_Sim *self, void *c) {
    PyObject *d = PyDict_New(), *v;
    size_t i;
    (void)c;
    for (i = 0; d && i < NBPY_NFIELDS; ++i) {
        if (!(v = nbpy_field_value(&self->desc, &nbpy_fields[i])) || PyDict_SetItemString(d, nbpy_fields[i].name, v) < 0) {
            Py_XDECREF(v);
            Py_DECREF(d);
            return NULL;
        }
        Py_DECREF(v);
    }
    return d;
}

static PyObject *nbpy_sim_get_radii(nbpy_Sim *self, void *c) {
    PyObject *a;
    npy_intp dims[1];
    nbody_result r;
    (void)c;
    if (nbpy_sim_ready(self, 0) < 0) return NULL;
    dims[0] = (npy_intp)nbody_get_n(self->sim);
    if (!(a = PyArray_SimpleNew(1, dims, NBPY_NPY_REAL))) return NULL;
    r = nbody_get_radii(self->sim, (nbody_real *)PyArray_DATA((PyArrayObject *)a));
    if (nbpy_check(&self->ctx, r, "radii") < 0) { Py_DECREF(a); return NULL; }
    return a;
}

static int nbpy_sim_set_radii(nbpy_Sim *self, PyObject *v, void *c) {
    PyObject *a;
    nbody_result r;
    (void)c;
    if (nbpy_sim_ready(self, 0) < 0) return -1;
    if (!v || v == Py_None) {
        r = nbody_set_radii(self->sim, NULL);
        return nbpy_check(&self->ctx, r, "radii");
    }
    a = PyArray_FROMANY(v, NBPY_NPY_REAL, 1, 1, NPY_ARRAY_CARRAY_RO | NPY_ARRAY_FORCECAST);
    if (!a) return -1;
    if ((size_t)PyArray_DIM((PyArrayObject *)a, 0) != nbody_get_n(self->sim)) {
        PyErr_Format(PyExc_ValueError, "radii: %zd values for %zu bodies", (Py_ssize_t)PyArray_DIM((PyArrayObject *)a, 0),
                     nbody_get_n(self->sim));
        Py_DECREF(a);
        return -1;
    }
    r = nbody_set_radii(self->sim, (const nbody_real *)PyArray_DATA((PyArrayObject *)a));
    Py_DECREF(a);
    return nbpy_check(&self->ctx, r, "radii");
}

static PyObject *nbpy_path_call(nbpy_Sim *self, PyObject *path, nbody_result (*fn)(const nbody_sim *, const char *),
                                const char *what) {
    PyObject *b;
    nbody_result r;
    if (nbpy_sim_ready(self, 0) < 0 || !PyUnicode_FSConverter(path, &b)) return NULL;
    r = fn(self->sim, PyBytes_AS_STRING(b));
    Py_DECREF(b);
    if (nbpy_check(&self->ctx, r, what) < 0) return NULL;
    Py_RETURN_NONE;
}
static PyObject *nbpy_sim_checkpoint_save(nbpy_Sim *self, PyObject *path) {
    return nbpy_path_call(self, path, nbody_checkpoint_save, "checkpoint_save");
}
static PyObject *nbpy_sim_archive_append(nbpy_Sim *self, PyObject *path) {
    return nbpy_path_call(self, path, nbody_archive_append, "archive_append");
}

static PyObject *nbpy_sim_archive_attach(nbpy_Sim *self, PyObject *args, PyObject *kwargs) {
    static char *kw[] = {"path", "every_t", "every_steps", "every_wall", NULL};
    PyObject *path, *b = NULL;
    double every_t = 0, every_wall = 0;
    unsigned long long every_steps = 0;
    nbody_result r;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|dKd:archive_attach", kw, &path, &every_t, &every_steps, &every_wall))
        return NULL;
    if (nbpy_sim_ready(self, 0) < 0) return NULL;
    if (path != Py_None && !PyUnicode_FSConverter(path, &b)) return NULL;
    r = nbody_archive_attach(self->sim, b ? PyBytes_AS_STRING(b) : NULL, (nbody_real)every_t, every_steps, every_wall);
    Py_XDECREF(b);
    if (nbpy_check(&self->ctx, r, "archive_attach") < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *nbpy_sim_repr(nbpy_Sim *self) {
    if (!self->sim) return PyUnicode_FromString("<nbodyh.Simulation (not created)>");
    char bt[40];
    if (self->in_call && self->busy_thread != PyThread_get_thread_ident())
        return PyUnicode_FromString("<nbodyh.Simulation (busy in another thread)>");
    return PyUnicode_FromFormat("<nbodyh.Simulation: %zu bodies, t = %s, engine %s (%s), method %s, %llu steps>",
                                nbody_get_n(self->sim), nbpy_fmt((double)nbody_get_stats(self->sim).t, bt, sizeof bt),
                                nbpy_engine_names[self->desc.engine], nbody_simd_name(self->sim),
                                nbpy_method_names[self->desc.method], nbody_get_stats(self->sim).steps);
}

/* ---- module-level constructors of simulations: checkpoint_load and Archive.load ---- */
static PyObject *nbpy_checkpoint_load(PyObject *mod, PyObject *args, PyObject *kwargs) {
    PyObject *path, *b;
    nbpy_Sim *o;
    nbody_sim *sim = NULL;
    nbody_result r;
    (void)mod;
    if (!PyArg_ParseTuple(args, "O:checkpoint_load", &path) || !PyUnicode_FSConverter(path, &b)) return NULL;
    if (!(o = nbpy_sim_alloc(nbpy_sim_class, kwargs))) { Py_DECREF(b); return NULL; }
    nbpy_release(&o->ctx);
    r = nbody_checkpoint_load(&sim, &o->desc, PyBytes_AS_STRING(b));
    nbpy_acquire(&o->ctx);
    Py_DECREF(b);
    if (nbpy_check(&o->ctx, r, "checkpoint_load") < 0) { Py_DECREF(o); return NULL; }
    o->sim = sim;
    return (PyObject *)o;
}

typedef struct {
    PyObject_HEAD
    nbody_archive *a;
    PyObject *path;
} nbpy_Archive;
static PyTypeObject nbpy_ArchiveType;

static int nbpy_archive_ready(nbpy_Archive *self) {
    if (self->a) return 0;
    PyErr_SetString(PyExc_ValueError, "the archive is closed");
    return -1;
}

static PyObject *nbpy_archive_tp_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static char *kw[] = {"path", NULL};
    PyObject *path, *b;
    nbpy_Archive *o;
    nbody_archive *a = NULL;
    nbody_result r;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O:Archive", kw, &path) || !PyUnicode_FSConverter(path, &b)) return NULL;
    Py_BEGIN_ALLOW_THREADS
    r = nbody_archive_open(&a, PyBytes_AS_STRING(b));
    Py_END_ALLOW_THREADS
    if (r != NBODY_OK) { nbpy_raise(r, NULL, PyBytes_AS_STRING(b)); Py_DECREF(b); return NULL; }
    if (!(o = (nbpy_Archive *)type->tp_alloc(type, 0))) { nbody_archive_close(a); Py_DECREF(b); return NULL; }
    o->a = a;
    o->path = PyUnicode_DecodeFSDefault(PyBytes_AS_STRING(b));
    Py_DECREF(b);
    return (PyObject *)o;
}

static void nbpy_archive_dealloc(nbpy_Archive *self) {
    if (self->a) nbody_archive_close(self->a);
    Py_XDECREF(self->path);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *nbpy_archive_close(nbpy_Archive *self, PyObject *unused) {
    (void)unused;
    if (self->a) nbody_archive_close(self->a);
    self->a = NULL;
    Py_RETURN_NONE;
}
static PyObject *nbpy_archive_enter(nbpy_Archive *self, PyObject *unused) {
    (void)unused;
    if (nbpy_archive_ready(self) < 0) return NULL;
    Py_INCREF(self);
    return (PyObject *)self;
}
static PyObject *nbpy_archive_exit(nbpy_Archive *self, PyObject *args) { (void)args; return nbpy_archive_close(self, NULL); }
static Py_ssize_t nbpy_archive_len(nbpy_Archive *self) {
    if (nbpy_archive_ready(self) < 0) return -1;
    return (Py_ssize_t)nbody_archive_count(self->a);
}

static PyObject *nbpy_archive_times(nbpy_Archive *self, void *c) {
    npy_intp dims[1];
    PyObject *a;
    size_t i;
    (void)c;
    if (nbpy_archive_ready(self) < 0) return NULL;
    dims[0] = (npy_intp)nbody_archive_count(self->a);
    if (!(a = PyArray_SimpleNew(1, dims, NBPY_NPY_REAL))) return NULL;
    for (i = 0; i < (size_t)dims[0]; ++i) ((nbody_real *)PyArray_DATA((PyArrayObject *)a))[i] = nbody_archive_time(self->a, i);
    return a;
}

static PyObject *nbpy_archive_load(nbpy_Archive *self, PyObject *args, PyObject *kwargs) {
    Py_ssize_t i;
    nbpy_Sim *o;
    nbody_sim *sim = NULL;
    nbody_result r;
    if (!PyArg_ParseTuple(args, "n:load", &i) || nbpy_archive_ready(self) < 0) return NULL;
    if (i < 0) i += (Py_ssize_t)nbody_archive_count(self->a);
    if (i < 0 || (size_t)i >= nbody_archive_count(self->a)) {
        PyErr_Format(PyExc_IndexError, "archive has %zu snapshots", nbody_archive_count(self->a));
        return NULL;
    }
    if (!(o = nbpy_sim_alloc(nbpy_sim_class, kwargs))) return NULL;
    nbpy_release(&o->ctx);
    r = nbody_archive_load(self->a, (size_t)i, &o->desc, &sim);
    nbpy_acquire(&o->ctx);
    if (nbpy_check(&o->ctx, r, "Archive.load") < 0) { Py_DECREF(o); return NULL; }
    o->sim = sim;
    return (PyObject *)o;
}

static PyObject *nbpy_archive_repr(nbpy_Archive *self) {
    if (!self->a) return PyUnicode_FromFormat("<nbodyh.Archive %R (closed)>", self->path);
    return PyUnicode_FromFormat("<nbodyh.Archive %R: %zu snapshots>", self->path, nbody_archive_count(self->a));
}

/* ==== module functions ====================================================================== */
static PyObject *nbpy_measure(PyObject *mod, PyObject *args, PyObject *kwargs) {
    static char *kw[] = {"system", "G", "softening", NULL};
    PyObject *sys;
    double G = 1, eps = 0, v[13];
    nbody_invariants inv;
    nbody_result r;
    (void)mod;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|dd:measure", kw, &sys, &G, &eps) || nbpy_system_check(sys) < 0) return NULL;
    r = nbody_measure(&((nbpy_System *)sys)->s, (nbody_real)G, (nbody_real)eps, &inv);
    if (r != NBODY_OK) return nbpy_raise(r, NULL, "measure");
    v[0] = (double)inv.mass; v[1] = (double)inv.kinetic; v[2] = (double)inv.potential; v[3] = (double)inv.energy;
    v[4] = (double)inv.px; v[5] = (double)inv.py; v[6] = (double)inv.pz; v[7] = (double)inv.lx; v[8] = (double)inv.ly;
    v[9] = (double)inv.lz; v[10] = (double)inv.cx; v[11] = (double)inv.cy; v[12] = (double)inv.cz;
    return nbpy_seq(&nbpy_InvariantsType, v, 13);
}

static PyObject *nbpy_accelerations(PyObject *mod, PyObject *args, PyObject *kwargs) {
    PyObject *sys, *a[3] = {NULL, NULL, NULL}, *out = NULL;
    nbody_desc d;
    nbpy_ctx c;
    npy_intp dims[1];
    nbody_result r;
    int k;
    (void)mod;
    if (!PyArg_ParseTuple(args, "O:accelerations", &sys) || nbpy_system_check(sys) < 0) return NULL;
    memset(&c, 0, sizeof c);
    if (nbpy_desc_from_kwargs(&d, &c, kwargs) < 0) goto done;
    dims[0] = (npy_intp)((nbpy_System *)sys)->s.n;
    for (k = 0; k < 3; ++k) if (!(a[k] = PyArray_ZEROS(1, dims, NBPY_NPY_REAL, 0))) goto done;
    nbpy_release(&c);
    r = nbody_accelerations(&d, &((nbpy_System *)sys)->s, (nbody_real *)PyArray_DATA((PyArrayObject *)a[0]),
                            (nbody_real *)PyArray_DATA((PyArrayObject *)a[1]), (nbody_real *)PyArray_DATA((PyArrayObject *)a[2]));
    nbpy_acquire(&c);
    if (nbpy_check(&c, r, "accelerations") == 0) out = PyTuple_Pack(3, a[0], a[1], a[2]);
done:
    for (k = 0; k < 3; ++k) Py_XDECREF(a[k]);
    nbpy_ctx_release(&c);
    return out;
}

/* nbody_desc_check: what nbody_create would refuse, without creating anything */
static PyObject *nbpy_desc_check(PyObject *mod, PyObject *args, PyObject *kwargs) {
    PyObject *sys;
    nbody_desc d;
    nbpy_ctx c;
    nbody_result r;
    int rc;
    (void)mod;
    if (!PyArg_ParseTuple(args, "O:desc_check", &sys) || nbpy_system_check(sys) < 0) return NULL;
    memset(&c, 0, sizeof c);
    rc = nbpy_desc_from_kwargs(&d, &c, kwargs);
    if (rc == 0) {
        r = nbody_desc_check(&d, &((nbpy_System *)sys)->s);
        rc = nbpy_check(&c, r, "desc_check");
    }
    nbpy_ctx_release(&c);
    if (rc < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *nbpy_load(PyObject *mod, PyObject *path) {
    nbody_system s;
    (void)mod;
    memset(&s, 0, sizeof s);
    if (nbpy_system_file(NBPY_FILE_LOAD, path, &s) < 0) return NULL;
    return nbpy_system_wrap(&s);
}

/* the generators: one function, the C generator chosen by `which` */
enum { NBPY_IC_PLUMMER, NBPY_IC_CUBE, NBPY_IC_GALAXY, NBPY_IC_COLLISION, NBPY_IC_EIGHT, NBPY_IC_PYTH, NBPY_IC_OSS };
static PyObject *nbpy_ic(int which, PyObject *args, PyObject *kwargs) {
    static char *kw_n[] = {"n", "seed", NULL};
    static char *kw_gal[] = {"n", "central_fraction", "seed", NULL};
    static char *kw_col[] = {"n", "central_fraction", "separation", "seed", NULL};
    static char *kw_none[] = {NULL};
    Py_ssize_t n = 0;
    unsigned long long seed = 42;
    double f = which == NBPY_IC_GALAXY ? 0.99 : 0.9, sep = 3;
    nbody_system s;
    nbody_result r = NBODY_ERR_INVALID_ARGUMENT;
    int ok;
    if (which == NBPY_IC_PLUMMER || which == NBPY_IC_CUBE)
        ok = PyArg_ParseTupleAndKeywords(args, kwargs, "n|K", kw_n, &n, &seed);
    else if (which == NBPY_IC_GALAXY)
        ok = PyArg_ParseTupleAndKeywords(args, kwargs, "n|dK", kw_gal, &n, &f, &seed);
    else if (which == NBPY_IC_COLLISION)
        ok = PyArg_ParseTupleAndKeywords(args, kwargs, "n|ddK", kw_col, &n, &f, &sep, &seed);
    else
        ok = PyArg_ParseTupleAndKeywords(args, kwargs, "", kw_none);
    if (!ok) return NULL;
    if (n < 0) { PyErr_Format(PyExc_ValueError, "n = %zd must be >= 1", n); return NULL; }
    memset(&s, 0, sizeof s);
    Py_BEGIN_ALLOW_THREADS
    switch (which) {
    case NBPY_IC_PLUMMER: r = nbody_ic_plummer(&s, (size_t)n, seed); break;
    case NBPY_IC_CUBE: r = nbody_ic_uniform_cube(&s, (size_t)n, seed); break;
    case NBPY_IC_GALAXY: r = nbody_ic_galaxy(&s, (size_t)n, (nbody_real)f, seed); break;
    case NBPY_IC_COLLISION: r = nbody_ic_collision(&s, (size_t)n, (nbody_real)f, (nbody_real)sep, seed); break;
    case NBPY_IC_EIGHT: r = nbody_ic_figure_eight(&s); break;
    case NBPY_IC_PYTH: r = nbody_ic_pythagorean(&s); break;
    default: r = nbody_ic_outer_solar_system(&s); break;
    }
    Py_END_ALLOW_THREADS
    if (r != NBODY_OK) {
        nbody_system_free(&s);
        if (r == NBODY_ERR_INVALID_ARGUMENT) {   /* the generators log nothing: say what they need */
            char msg[200];
            PyOS_snprintf(msg, sizeof msg, "invalid argument: n = %ld, central_fraction = %g, separation = %g "
                          "(n >= 1; galaxies n >= 2 and 0 < central_fraction < 1)", (long)n, f, sep);
            PyErr_SetString(PyExc_ValueError, msg);
            return NULL;
        }
        return nbpy_raise(r, NULL, "initial conditions");
    }
    return nbpy_system_wrap(&s);
}
#define NBPY_IC_FN(name, which) \
    static PyObject *nbpy_##name(PyObject *m, PyObject *a, PyObject *k) { (void)m; return nbpy_ic(which, a, k); }
NBPY_IC_FN(plummer, NBPY_IC_PLUMMER)
NBPY_IC_FN(uniform_cube, NBPY_IC_CUBE)
NBPY_IC_FN(galaxy, NBPY_IC_GALAXY)
NBPY_IC_FN(collision, NBPY_IC_COLLISION)
NBPY_IC_FN(figure_eight, NBPY_IC_EIGHT)
NBPY_IC_FN(pythagorean, NBPY_IC_PYTH)
NBPY_IC_FN(outer_solar_system, NBPY_IC_OSS)

static int nbpy_vec3(PyObject *v, nbody_real out[3], const char *what) {
    PyObject *a = PyArray_FROMANY(v, NBPY_NPY_REAL, 1, 1, NPY_ARRAY_CARRAY_RO | NPY_ARRAY_FORCECAST);
    if (!a) return -1;
    if (PyArray_DIM((PyArrayObject *)a, 0) != 3) {
        PyErr_Format(PyExc_ValueError, "%s must have 3 components", what);
        Py_DECREF(a);
        return -1;
    }
    memcpy(out, PyArray_DATA((PyArrayObject *)a), 3 * sizeof(nbody_real));
    Py_DECREF(a);
    return 0;
}

static PyObject *nbpy_orbit_to_state(PyObject *mod, PyObject *args, PyObject *kwargs) {
    static char *kw[] = {"mu", "orbit", "anomaly", NULL};
    double mu;
    PyObject *orb, *anom = NULL, *pos, *vel;
    nbody_orbit o;
    nbody_anomaly an;
    npy_intp dims[1] = {3};
    nbody_result r;
    (void)mod;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "dO|O:orbit_to_state", kw, &mu, &orb, &anom)) return NULL;
    if (nbpy_orbit_from(orb, &o) < 0 || nbpy_anomaly(anom, &an) < 0) return NULL;
    pos = PyArray_SimpleNew(1, dims, NBPY_NPY_REAL);
    vel = PyArray_SimpleNew(1, dims, NBPY_NPY_REAL);
    if (!pos || !vel) { Py_XDECREF(pos); Py_XDECREF(vel); return NULL; }
    r = nbody_orbit_to_state((nbody_real)mu, &o, an, (nbody_real *)PyArray_DATA((PyArrayObject *)pos),
                             (nbody_real *)PyArray_DATA((PyArrayObject *)vel));
    if (r != NBODY_OK) { Py_DECREF(pos); Py_DECREF(vel); return nbpy_raise(r, NULL, "orbit_to_state"); }
    return Py_BuildValue("(NN)", pos, vel);
}

static PyObject *nbpy_orbit_from_state(PyObject *mod, PyObject *args, PyObject *kwargs) {
    static char *kw[] = {"mu", "pos", "vel", NULL};
    double mu;
    PyObject *p, *v;
    nbody_real pos[3], vel[3];
    nbody_orbit o;
    nbody_result r;
    (void)mod;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "dOO:orbit_from_state", kw, &mu, &p, &v)) return NULL;
    if (nbpy_vec3(p, pos, "pos") < 0 || nbpy_vec3(v, vel, "vel") < 0) return NULL;
    r = nbody_orbit_from_state((nbody_real)mu, pos, vel, &o);
    if (r != NBODY_OK) return nbpy_raise(r, NULL, "orbit_from_state");
    return nbpy_orbit_object(&o);
}

static PyObject *nbpy_available(PyObject *mod, PyObject *engine) {
    int e = nbpy_enum_value(engine, "engine", nbpy_engine_names, NBODY_ENGINE_COUNT_);
    (void)mod;
    if (e < 0) return NULL;
    return PyBool_FromLong(nbody_engine_available((nbody_engine)e));
}

static PyObject *nbpy_simd_available(PyObject *mod, PyObject *level) {
    int e = nbpy_enum_value(level, "simd", nbpy_simd_names, NBODY_SIMD_COUNT_);
    (void)mod;
    if (e < 0) return NULL;
    return PyBool_FromLong(nbody_simd_available((nbody_simd)e));
}

static PyObject *nbpy_method_order(PyObject *mod, PyObject *args) {
    PyObject *m;
    int order = 0, k;
    (void)mod;
    if (!PyArg_ParseTuple(args, "O|i:method_order", &m, &order)) return NULL;
    if ((k = nbpy_enum_value(m, "method", nbpy_method_names, NBODY_METHOD_COUNT_)) < 0) return NULL;
    return PyLong_FromLong(nbody_method_order((nbody_method)k, order));
}

static PyObject *nbpy_method_adaptive(PyObject *mod, PyObject *m) {
    int k = nbpy_enum_value(m, "method", nbpy_method_names, NBODY_METHOD_COUNT_);
    (void)mod;
    if (k < 0) return NULL;
    return PyBool_FromLong(nbody_method_adaptive((nbody_method)k));
}

static PyObject *nbpy_names_tuple(const char *const *names, int count) {
    PyObject *t = PyTuple_New(count);
    int i;
    for (i = 0; t && i < count; ++i) {
        PyObject *s = PyUnicode_FromString(names[i]);
        if (!s) { Py_DECREF(t); return NULL; }
        PyTuple_SET_ITEM(t, i, s);
    }
    return t;
}

/* the exception a result code raises, for the tests: _raise_result(code) */
static PyObject *nbpy_raise_result(PyObject *mod, PyObject *arg) {
    long code = PyLong_AsLong(arg);
    nbpy_ctx none;                   /* no call was made: no library line, the result's name */
    (void)mod;
    if (code == -1 && PyErr_Occurred()) return NULL;
    if (code == NBODY_OK || code == NBODY_STOPPED) Py_RETURN_NONE;
    memset(&none, 0, sizeof none);
    return nbpy_raise((nbody_result)code, &none, "result");
}

static PyObject *nbpy_alloc_stats(PyObject *mod, PyObject *unused) {
    (void)mod; (void)unused;
    return Py_BuildValue("(LLL)", nbpy_live_blocks, nbpy_live_bytes, nbpy_total_blocks);
}

/* the Python classes that C-made objects get (nbodyh.System adds pictures, nbodyh.Simulation
   advance(progress=...)) */
static PyObject *nbpy_register_classes(PyObject *mod, PyObject *args) {
    PyObject *sys_cls, *sim_cls;
    (void)mod;
    if (!PyArg_ParseTuple(args, "O!O!", &PyType_Type, &sys_cls, &PyType_Type, &sim_cls)) return NULL;
    if (!PyType_IsSubtype((PyTypeObject *)sys_cls, &nbpy_SystemType) || !PyType_IsSubtype((PyTypeObject *)sim_cls, &nbpy_SimType)) {
        PyErr_SetString(PyExc_TypeError, "expected subclasses of System and Simulation");
        return NULL;
    }
    Py_INCREF(sys_cls);
    Py_INCREF(sim_cls);
    nbpy_system_class = (PyTypeObject *)sys_cls;
    nbpy_sim_class = (PyTypeObject *)sim_cls;
    Py_RETURN_NONE;
}

/* ==== type and module tables ================================================================ */
static PyGetSetDef nbpy_sim_getset[] = {
    {"state", (getter)nbpy_sim_state, NULL, "a new System holding the current state (a copy; see get_state(out=))", NULL},
    {"t", (getter)nbpy_sim_t, NULL, "the simulation time", NULL},
    {"stats", (getter)nbpy_sim_stats, NULL, "Stats(t, dt, steps, rejected, force_evals)", NULL},
    {"n", (getter)nbpy_sim_n, NULL, "bodies now (merging collisions shrink it)", NULL},
    {"n_active", (getter)nbpy_sim_n_active, NULL, "attracting bodies now (the rest are test particles)", NULL},
    {"event", (getter)nbpy_sim_event, NULL, "the Event of the last stop (kind 'none' before any)", NULL},
    {"simd_name", (getter)nbpy_sim_simd_name, NULL, "the SIMD level a CPU engine runs ('avx512', 'avx2', 'portable'; 'none' on GPUs)", NULL},
    {"desc", (getter)nbpy_sim_desc, NULL, "the numeric nbody_desc fields as given (0 = the library's default)", NULL},
    {"radii", (getter)nbpy_sim_get_radii, (setter)nbpy_sim_set_radii,
     "collision radii (a copy; assign an array of n values >= 0, or None for point masses)", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyMethodDef nbpy_sim_methods[] = {
    {"step", (PyCFunction)nbpy_sim_step, METH_NOARGS,
     "step()\n--\n\nTake one accepted step (nbody_step), the GIL released.\n\nReturns\n-------\nEvent or None\n"
     "    The Event when an exit condition, a collision with collision='stop' or a hook stopped the run."},
    {"_advance", (PyCFunction)(void (*)(void))nbpy_sim_advance, METH_VARARGS | METH_KEYWORDS,
     "_advance(t_end, bar=None)\n--\n\nnbody_advance with the GIL released; bar(info) is called about every 0.1 s. "
     "Use advance()."},
    {"get_state", (PyCFunction)(void (*)(void))nbpy_sim_get_state, METH_VARARGS | METH_KEYWORDS,
     "get_state(out=None)\n--\n\nThe current state (nbody_get_state): into `out` (a System of n bodies, no "
     "allocation: views of it see the new values) or a new System."},
    {"set_state", (PyCFunction)nbpy_sim_set_state, METH_O,
     "set_state(system)\n--\n\nReplace the state (nbody_set_state): positions, velocities, masses and t; "
     "another n is allowed (radii then reset to 0).\n\nRaises\n------\nValueError\n    Non-finite values or "
     "negative masses (nothing changes)."},
    {"checkpoint_save", (PyCFunction)nbpy_sim_checkpoint_save, METH_O,
     "checkpoint_save(path)\n--\n\nAn exact restart (nbody_checkpoint_save): nbodyh.checkpoint_load(path, **desc) "
     "continues bit for bit."},
    {"archive_attach", (PyCFunction)(void (*)(void))nbpy_sim_archive_attach, METH_VARARGS | METH_KEYWORDS,
     "archive_attach(path, every_t=0.0, every_steps=0, every_wall=0.0)\n--\n\nAppend a snapshot to the archive "
     "`path` after the steps where simulation time passed a multiple of every_t, every_steps steps were taken or "
     "every_wall seconds went by (nbody_archive_attach); path None detaches."},
    {"archive_append", (PyCFunction)nbpy_sim_archive_append, METH_O,
     "archive_append(path)\n--\n\nAppend one snapshot to the archive `path` now (nbody_archive_append)."},
    {NULL, NULL, 0, NULL}};

static PyTypeObject nbpy_SimType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    "nbodyh._nbodyh.Simulation",
};

static PyGetSetDef nbpy_archive_getset[] = {
    {"times", (getter)nbpy_archive_times, NULL, "the snapshots' times (numpy array)", NULL},
    {NULL, NULL, NULL, NULL, NULL}};
static PyMethodDef nbpy_archive_methods[] = {
    {"load", (PyCFunction)(void (*)(void))nbpy_archive_load, METH_VARARGS | METH_KEYWORDS,
     "load(i, **desc)\n--\n\nA Simulation continuing bit for bit from snapshot i (nbody_archive_load); the desc's "
     "numerics must match the saved run's."},
    {"close", (PyCFunction)nbpy_archive_close, METH_NOARGS, "close()\n--\n\nRelease the index."},
    {"__enter__", (PyCFunction)nbpy_archive_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)nbpy_archive_exit, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL}};
static PySequenceMethods nbpy_archive_as_sequence = {(lenfunc)nbpy_archive_len, 0, 0, 0, 0, 0, 0, 0, 0, 0};
static PyTypeObject nbpy_ArchiveType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    "nbodyh._nbodyh.Archive",
};

#define NBPY_KW (METH_VARARGS | METH_KEYWORDS)
#define NBPY_FN(f) (PyCFunction)(void (*)(void))(f)
static PyMethodDef nbpy_module_methods[] = {
    {"plummer", NBPY_FN(nbpy_plummer), NBPY_KW, "plummer(n, seed=42)\n--\n\nA Plummer sphere of n bodies, total mass 1, "
     "G = 1 (nbody_ic_plummer); the same bodies for a seed on every machine."},
    {"uniform_cube", NBPY_FN(nbpy_uniform_cube), NBPY_KW, "uniform_cube(n, seed=42)\n--\n\nn bodies at rest, uniform in "
     "a cube (nbody_ic_uniform_cube)."},
    {"galaxy", NBPY_FN(nbpy_galaxy), NBPY_KW, "galaxy(n, central_fraction=0.99, seed=42)\n--\n\nA thin disc of n-1 stars "
     "on near-circular orbits around a central body holding central_fraction of the mass 1 (nbody_ic_galaxy)."},
    {"collision", NBPY_FN(nbpy_collision), NBPY_KW, "collision(n, central_fraction=0.9, separation=3.0, seed=42)\n--\n\n"
     "Two galaxies of n/2 bodies, `separation` apart, approaching each other (nbody_ic_collision)."},
    {"figure_eight", NBPY_FN(nbpy_figure_eight), NBPY_KW, "figure_eight()\n--\n\nThe three-body figure-eight "
     "choreography (Chenciner & Montgomery), period about 6.3259."},
    {"pythagorean", NBPY_FN(nbpy_pythagorean), NBPY_KW, "pythagorean()\n--\n\nBurrau's Pythagorean three-body problem "
     "(masses 3, 4, 5 at rest)."},
    {"outer_solar_system", NBPY_FN(nbpy_outer_solar_system), NBPY_KW, "outer_solar_system()\n--\n\nThe Sun, Jupiter, "
     "Saturn, Uranus, Neptune at JD 2440400.5; G = 1, AU, solar masses, time unit 1/k days (a year is about 2 pi)."},
    {"measure", NBPY_FN(nbpy_measure), NBPY_KW, "measure(system, G=1.0, softening=0.0)\n--\n\nEnergy, momentum, angular "
     "momentum, centre of mass (nbody_measure).\n\nReturns\n-------\nInvariants\n    mass, kinetic, potential, energy, "
     "px, py, pz, lx, ly, lz, cx, cy, cz."},
    {"accelerations", NBPY_FN(nbpy_accelerations), NBPY_KW, "accelerations(system, **desc)\n--\n\nThe accelerations "
     "of every body from gravity alone (nbody_accelerations; extra_force is not applied) with the engine, G, softening, theta ... of the desc keywords.\n\n"
     "Returns\n-------\n(ax, ay, az) : tuple of numpy arrays"},
    {"desc_check", NBPY_FN(nbpy_desc_check), NBPY_KW, "desc_check(system, **desc)\n--\n\nCheck a desc and a "
     "system as Simulation(system, **desc) would (nbody_desc_check), creating nothing.\n\nRaises\n------\n"
     "ValueError\n    What the library refuses, with its reason (the field and the value).\nUnavailableError\n"
     "    An engine or SIMD level this build or machine lacks."},
    {"load", (PyCFunction)nbpy_load, METH_O, "load(path)\n--\n\nA System from a snapshot written by System.save "
     "(nbody_load).\n\nRaises\n------\nOSError\n    Missing or unreadable file.\nFormatError\n    Not a valid snapshot."},
    {"checkpoint_load", NBPY_FN(nbpy_checkpoint_load), NBPY_KW, "checkpoint_load(path, **desc)\n--\n\nA Simulation "
     "from a checkpoint (nbody_checkpoint_load), continuing bit for bit; the desc's numerics must match the saved "
     "one's (else ValueError)."},
    {"orbit_to_state", NBPY_FN(nbpy_orbit_to_state), NBPY_KW, "orbit_to_state(mu, orbit, anomaly='true')\n--\n\n"
     "Relative position and velocity (two arrays of 3) of an orbit about mu = G (M + m)."},
    {"orbit_from_state", NBPY_FN(nbpy_orbit_from_state), NBPY_KW, "orbit_from_state(mu, pos, vel)\n--\n\nThe Orbit "
     "of a relative position and velocity about mu."},
    {"available", (PyCFunction)nbpy_available, METH_O, "available(engine)\n--\n\nTrue when the engine is compiled "
     "into this build (the device is not probed: creating a simulation says whether one is there)."},
    {"simd_available", (PyCFunction)nbpy_simd_available, METH_O, "simd_available(level)\n--\n\nTrue when the SIMD "
     "level ('portable', 'avx2', 'avx512') is built in and this CPU runs it."},
    {"method_order", (PyCFunction)nbpy_method_order, METH_VARARGS, "method_order(method, adams_order=0)\n--\n\nThe "
     "order of a method."},
    {"method_adaptive", (PyCFunction)nbpy_method_adaptive, METH_O, "method_adaptive(method)\n--\n\nTrue when "
     "tolerance > 0 turns on step control for the method."},
    {"_alloc_stats", (PyCFunction)nbpy_alloc_stats, METH_NOARGS, "_alloc_stats()\n--\n\n(live blocks, live bytes, "
     "blocks ever allocated) of the library's allocations in this process."},
    {"_register_classes", (PyCFunction)nbpy_register_classes, METH_VARARGS, NULL},
    {"_raise_result", (PyCFunction)nbpy_raise_result, METH_O, "_raise_result(code)\n--\n\nRaise what nbody_result "
     "`code` raises (None for NBODY_OK and NBODY_STOPPED): the mapping, for the tests."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef nbpy_module = {PyModuleDef_HEAD_INIT, "_nbodyh",
    "The C extension of nbodyh (use the package nbodyh).", -1, nbpy_module_methods, NULL, NULL, NULL, NULL};

static int nbpy_add_exception(PyObject *m, PyObject **slot, const char *name, PyObject *bases, const char *doc) {
    *slot = PyErr_NewExceptionWithDoc(name, doc, bases, NULL);
    if (!*slot) return -1;
    Py_INCREF(*slot);
    return PyModule_AddObject(m, strrchr(name, '.') + 1, *slot);
}

static int nbpy_add_exceptions(PyObject *m) {
    PyObject *b;
    int rc = 0;
    if (nbpy_add_exception(m, &nbpy_Error, "nbodyh.Error", NULL, "Base of the package's own exceptions.") < 0) return -1;
#define NBPY_EXC(slot, name, base2, doc) \
    b = PyTuple_Pack(2, nbpy_Error, base2); \
    rc = b ? nbpy_add_exception(m, &slot, name, b, doc) : -1; \
    Py_XDECREF(b); \
    if (rc < 0) return -1;
    NBPY_EXC(nbpy_UnavailableError, "nbodyh.UnavailableError", PyExc_RuntimeError,
             "The engine, SIMD level or feature is not in this build or not on this machine.")
    NBPY_EXC(nbpy_FormatError, "nbodyh.FormatError", PyExc_ValueError, "A file is not a valid snapshot, checkpoint or archive.")
    NBPY_EXC(nbpy_DeviceError, "nbodyh.DeviceError", PyExc_RuntimeError, "A CUDA or OpenCL call failed.")
    NBPY_EXC(nbpy_StepTooSmallError, "nbodyh.StepTooSmallError", PyExc_ArithmeticError,
             "Adaptive step control needed a step below dt_min or round-off; the state is the last accepted step.")
    NBPY_EXC(nbpy_CancelledError, "nbodyh.CancelledError", PyExc_RuntimeError,
             "A progress callback returned True; the state is the last accepted step.")
    NBPY_EXC(nbpy_BusyError, "nbodyh.BusyError", PyExc_RuntimeError,
             "The simulation is inside a call on another thread, or step/advance was called from its own callback.")
#undef NBPY_EXC
    return nbpy_add_exception(m, &nbpy_Warning, "nbodyh.NbodyWarning", PyExc_UserWarning, "A warning the library logged.");
}

static int nbpy_init_types(void) {
    nbpy_SystemType.tp_basicsize = sizeof(nbpy_System);
    nbpy_SystemType.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE;
    nbpy_SystemType.tp_doc = "System(n=None, *, x=None, y=None, z=None, vx=None, vy=None, vz=None, m=None, t=0.0)\n--\n\n"
        "Bodies as a structure of arrays (nbody_system). x, y, z, vx, vy, vz, m are numpy views of memory the "
        "System owns: writing to them changes the System, reading costs no copy.";
    nbpy_SystemType.tp_new = nbpy_system_tp_new;
    nbpy_SystemType.tp_dealloc = (destructor)nbpy_system_dealloc;
    nbpy_SystemType.tp_getset = nbpy_system_getset;
    nbpy_SystemType.tp_methods = nbpy_system_methods;
    nbpy_SystemType.tp_repr = (reprfunc)nbpy_system_repr;
    nbpy_SystemType.tp_as_sequence = &nbpy_system_as_sequence;

    nbpy_SimType.tp_basicsize = sizeof(nbpy_Sim);
    nbpy_SimType.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC;
    nbpy_SimType.tp_doc = "Simulation(system, **desc)\n--\n\nAn N-body simulation (nbody_sim).";
    nbpy_SimType.tp_new = nbpy_sim_tp_new;
    nbpy_SimType.tp_dealloc = (destructor)nbpy_sim_dealloc;
    nbpy_SimType.tp_traverse = (traverseproc)nbpy_sim_traverse;
    nbpy_SimType.tp_clear = (inquiry)nbpy_sim_clear;
    nbpy_SimType.tp_getset = nbpy_sim_getset;
    nbpy_SimType.tp_methods = nbpy_sim_methods;
    nbpy_SimType.tp_repr = (reprfunc)nbpy_sim_repr;
    nbpy_SimType.tp_weaklistoffset = offsetof(nbpy_Sim, weakrefs);

    nbpy_ArchiveType.tp_basicsize = sizeof(nbpy_Archive);
    nbpy_ArchiveType.tp_flags = Py_TPFLAGS_DEFAULT;
    nbpy_ArchiveType.tp_doc = "Archive(path)\n--\n\nA snapshot archive opened for reading (nbody_archive_open): "
        "len(a) snapshots at a.times, a.load(i, **desc) continues from one.";
    nbpy_ArchiveType.tp_new = nbpy_archive_tp_new;
    nbpy_ArchiveType.tp_dealloc = (destructor)nbpy_archive_dealloc;
    nbpy_ArchiveType.tp_getset = nbpy_archive_getset;
    nbpy_ArchiveType.tp_methods = nbpy_archive_methods;
    nbpy_ArchiveType.tp_repr = (reprfunc)nbpy_archive_repr;
    nbpy_ArchiveType.tp_as_sequence = &nbpy_archive_as_sequence;

    if (PyType_Ready(&nbpy_SystemType) < 0 || PyType_Ready(&nbpy_SimType) < 0 || PyType_Ready(&nbpy_ArchiveType) < 0)
        return -1;
    if (PyStructSequence_InitType2(&nbpy_StatsType, &nbpy_stats_desc) < 0 ||
        PyStructSequence_InitType2(&nbpy_InvariantsType, &nbpy_inv_desc) < 0 ||
        PyStructSequence_InitType2(&nbpy_EventType, &nbpy_event_desc) < 0 ||
        PyStructSequence_InitType2(&nbpy_OrbitType, &nbpy_orbit_desc) < 0 ||
        PyStructSequence_InitType2(&nbpy_ProgressType, &nbpy_progress_desc) < 0)
        return -1;
    return 0;
}

static int nbpy_add_type(PyObject *m, const char *name, PyTypeObject *t) {
    Py_INCREF(t);
    return PyModule_AddObject(m, name, (PyObject *)t);
}

PyMODINIT_FUNC PyInit__nbodyh(void) {
    PyObject *m;
    /* the desc's enum fields are written as int (nbpy_set_field) */
    if (sizeof(nbody_engine) != sizeof(int) || sizeof(nbody_collision) != sizeof(int)) {
        PyErr_SetString(PyExc_ImportError, "nbodyh: enums are not int-sized with this compiler");
        return NULL;
    }
    import_array();
    nbpy_names_init();
    if (nbpy_init_types() < 0) return NULL;
    if (!(m = PyModule_Create(&nbpy_module))) return NULL;
    if (nbpy_add_exceptions(m) < 0 || nbpy_add_type(m, "System", &nbpy_SystemType) < 0 ||
        nbpy_add_type(m, "Simulation", &nbpy_SimType) < 0 || nbpy_add_type(m, "Archive", &nbpy_ArchiveType) < 0 ||
        nbpy_add_type(m, "Stats", &nbpy_StatsType) < 0 || nbpy_add_type(m, "Invariants", &nbpy_InvariantsType) < 0 ||
        nbpy_add_type(m, "Event", &nbpy_EventType) < 0 || nbpy_add_type(m, "Orbit", &nbpy_OrbitType) < 0 ||
        nbpy_add_type(m, "Progress", &nbpy_ProgressType) < 0 ||
        PyModule_AddStringConstant(m, "library_version", nbody_version_string()) < 0 ||
        PyModule_AddStringConstant(m, "features", NBODYH_FEATURES) < 0 ||
        PyModule_AddObject(m, "ENGINES", nbpy_names_tuple(nbpy_engine_names, NBODY_ENGINE_COUNT_)) < 0 ||
        PyModule_AddObject(m, "METHODS", nbpy_names_tuple(nbpy_method_names, NBODY_METHOD_COUNT_)) < 0 ||
        PyModule_AddIntConstant(m, "REAL_BYTES", (long)sizeof(nbody_real)) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
