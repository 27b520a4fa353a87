/* SPDX-License-Identifier: GPL-2.0-or-later */
/* python/_core.c: slurm_elastic._core, the thin compiled layer of the Python binding: MPI
 * start and end, the libelastic context, sampler and batch plan as Python objects. It
 * turns -1/errno into slurm_elastic.Error (an OSError with the library's text), releases
 * the GIL around every call that can block (collectives, agreement, recovery), keeps MPI
 * handles and MPI_IN_PLACE on the C side, and hands exceptions raised by Python callbacks
 * (log, world change, exit hooks) back to the caller of the call that ran them. The
 * user-facing API and its documentation are in slurm_elastic/__init__.py and
 * slurm_elastic/torch.py. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mpi.h>

#include "elastic/elastic.h"

static PyObject *Error; /* slurm_elastic.Error (OSError) */

/* Raise Error(errno, text) from a failed libelastic call. */
static PyObject *_raise(int e, const elastic_error_t *err, const char *fallback)
{
	const char *text = err && err->text[0] ? err->text : fallback;
	PyObject *args = Py_BuildValue("(is)", e, text ? text : strerror(e));

	if (args) {
		PyErr_SetObject(Error, args);
		Py_DECREF(args);
	}
	return NULL;
}

/* ---- MPI ---- */

static int mpi_started_here;

static PyObject *py_mpi_init(PyObject *self, PyObject *noargs)
{
	int inited = 0, provided, rc;

	MPI_Initialized(&inited);
	if (inited)
		Py_RETURN_FALSE;
	Py_BEGIN_ALLOW_THREADS rc =
		MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided);
	Py_END_ALLOW_THREADS if (rc != MPI_SUCCESS)
	{
		PyErr_Format(Error, "MPI_Init_thread failed (MPI error %d)", rc);
		return NULL;
	}
	mpi_started_here = 1;
	Py_RETURN_TRUE;
}

static PyObject *py_mpi_initialized(PyObject *self, PyObject *noargs)
{
	int inited = 0, fin = 0;
	MPI_Initialized(&inited);
	MPI_Finalized(&fin);
	return PyBool_FromLong(inited && !fin);
}

/* ---- Context ---- */

typedef struct {
	PyObject_HEAD elastic_ctx_t *ctx;
	Py_buffer *bufs; /* registered buffers, held until close */
	int nbufs;
	PyObject *log_cb, *change_cb, *exit_cb;
	PyObject *pending;     /* exception raised by a callback, for the caller */
	struct sigaction usr1; /* SIGUSR1 as elastic_init left it */
	int usr1_known;
} CtxObject;

static PyTypeObject CtxType;

static int _check_open(CtxObject *c)
{
	if (!c->ctx) {
		PyErr_SetString(PyExc_ValueError, "the elastic context is closed");
		return -1;
	}
	return 0;
}

/* Keep the first exception raised by a callback (GIL held). */
static void _stash(CtxObject *c)
{
	PyObject *e = PyErr_GetRaisedException();
	if (!c->pending)
		c->pending = e;
	else
		Py_XDECREF(e);
}

/* After a call that may have run callbacks: raise what they raised. */
static int _unstash(CtxObject *c)
{
	if (!c->pending)
		return 0;
	PyErr_SetRaisedException(c->pending);
	c->pending = NULL;
	return -1;
}

static void _on_log(void *arg, int level, const char *msg)
{
	CtxObject *c = arg;
	PyGILState_STATE g = PyGILState_Ensure();
	PyObject *r =
		c->log_cb ? PyObject_CallFunction(c->log_cb, "is", level, msg) : NULL;
	if (!r && PyErr_Occurred())
		_stash(c);
	Py_XDECREF(r);
	PyGILState_Release(g);
}

static void _on_change(elastic_ctx_t *ctx, void *arg)
{
	CtxObject *c = arg;
	PyGILState_STATE g = PyGILState_Ensure();
	PyObject *r = c->change_cb ? PyObject_CallNoArgs(c->change_cb) : NULL;
	if (!r && PyErr_Occurred())
		_stash(c);
	Py_XDECREF(r);
	PyGILState_Release(g);
}

/* The library is about to end the process (_exit): run the Python hook and
 * flush Python's buffered output, which _exit would drop. */
static void _on_exit(void *arg, int status, const char *why)
{
	CtxObject *c = arg;
	PyGILState_STATE g = PyGILState_Ensure();
	if (c->exit_cb) {
		PyObject *r = PyObject_CallFunction(c->exit_cb, "is", status, why);
		if (!r)
			PyErr_Print(); /* nobody is left to catch it */
		Py_XDECREF(r);
	}
	PyObject *out = PySys_GetObject("stdout"), *err = PySys_GetObject("stderr");
	for (PyObject *f = out; f; f = (f == out ? err : NULL)) {
		PyObject *r = f != Py_None ? PyObject_CallMethod(f, "flush", NULL) : NULL;
		Py_XDECREF(r);
		PyErr_Clear();
	}
	PyGILState_Release(g);
}

static int Ctx_init(CtxObject *self, PyObject *args, PyObject *kw)
{
	elastic_error_t err = {""};
	elastic_ctx_t *ctx = NULL;
	int rc, e, inited = 0;

	if (!PyArg_ParseTuple(args, ""))
		return -1;
	if (self->ctx) {
		PyErr_SetString(PyExc_RuntimeError, "Context.__init__ called twice");
		return -1;
	}
	MPI_Initialized(&inited);
	if (!inited) {
		PyErr_SetString(Error,
				"MPI is not initialized (call slurm_elastic.mpi_init())");
		return -1;
	}
	Py_BEGIN_ALLOW_THREADS rc = elastic_init(MPI_COMM_WORLD, &ctx, &err);
	e = errno;
	Py_END_ALLOW_THREADS if (rc < 0)
	{
		_raise(e, &err, "elastic_init failed");
		return -1;
	}
	self->ctx = ctx;
	self->usr1_known = sigaction(SIGUSR1, NULL, &self->usr1) == 0;
	elastic_set_exit_hook(ctx, _on_exit, self);
	return 0;
}

static void _release_bufs(CtxObject *c)
{
	for (int i = 0; i < c->nbufs; i++)
		PyBuffer_Release(&c->bufs[i]);
	PyMem_Free(c->bufs);
	c->bufs = NULL;
	c->nbufs = 0;
}

static void Ctx_dealloc(CtxObject *self)
{
	if (self->ctx)
		elastic_destroy(self->ctx);
	self->ctx = NULL;
	_release_bufs(self);
	Py_CLEAR(self->log_cb);
	Py_CLEAR(self->change_cb);
	Py_CLEAR(self->exit_cb);
	Py_CLEAR(self->pending);
	Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Ctx_register(CtxObject *self, PyObject *args)
{
	const char *name;
	PyObject *obj;
	Py_buffer view, *nb;
	elastic_error_t err = {""};

	if (!PyArg_ParseTuple(args, "sO", &name, &obj) || _check_open(self))
		return NULL;
	if (PyObject_GetBuffer(obj, &view, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0)
		return NULL;
	if (view.len == 0) {
		PyBuffer_Release(&view);
		PyErr_Format(PyExc_ValueError, "register('%s'): the buffer is empty",
			     name);
		return NULL;
	}
	if (elastic_register(self->ctx, name, view.buf, (size_t)view.len, &err) < 0) {
		int e = errno;
		PyBuffer_Release(&view);
		return _raise(e, &err, NULL);
	}
	nb = PyMem_Realloc(self->bufs, sizeof(*nb) * (size_t)(self->nbufs + 1));
	if (!nb) {
		PyBuffer_Release(&view);
		return PyErr_NoMemory();
	}
	self->bufs = nb;
	self->bufs[self->nbufs++] = view; /* held: the memory stays put */
	Py_RETURN_NONE;
}

static PyObject *Ctx_set_commit_mode(CtxObject *self, PyObject *args)
{
	int mode;
	elastic_error_t err = {""};
	if (!PyArg_ParseTuple(args, "i", &mode) || _check_open(self))
		return NULL;
	if (elastic_set_commit_mode(self->ctx, mode, &err) < 0)
		return _raise(errno, &err, NULL);
	Py_RETURN_NONE;
}

static PyObject *Ctx_set_watchdog(CtxObject *self, PyObject *args)
{
	double s;
	elastic_error_t err = {""};
	if (!PyArg_ParseTuple(args, "d", &s) || _check_open(self))
		return NULL;
	if (elastic_set_watchdog(self->ctx, s, &err) < 0)
		return _raise(errno, &err, NULL);
	Py_RETURN_NONE;
}

static PyObject *Ctx_set_log(CtxObject *self, PyObject *args)
{
	PyObject *cb;
	int level = ELASTIC_LOG_INFO;
	if (!PyArg_ParseTuple(args, "O|i", &cb, &level) || _check_open(self))
		return NULL;
	if (cb != Py_None && !PyCallable_Check(cb)) {
		PyErr_SetString(PyExc_TypeError, "set_log: expected a callable or None");
		return NULL;
	}
	Py_XSETREF(self->log_cb, cb == Py_None ? NULL : Py_NewRef(cb));
	elastic_set_log(self->ctx, self->log_cb ? _on_log : NULL, self, level);
	Py_RETURN_NONE;
}

static PyObject *Ctx_set_change_callback(CtxObject *self, PyObject *args)
{
	PyObject *cb;
	if (!PyArg_ParseTuple(args, "O", &cb) || _check_open(self))
		return NULL;
	if (cb != Py_None && !PyCallable_Check(cb)) {
		PyErr_SetString(PyExc_TypeError,
				"set_change_callback: expected a callable or None");
		return NULL;
	}
	Py_XSETREF(self->change_cb, cb == Py_None ? NULL : Py_NewRef(cb));
	elastic_set_change_callback(self->ctx, self->change_cb ? _on_change : NULL, self);
	Py_RETURN_NONE;
}

static PyObject *Ctx_set_exit_hook(CtxObject *self, PyObject *args)
{
	PyObject *cb;
	if (!PyArg_ParseTuple(args, "O", &cb) || _check_open(self))
		return NULL;
	if (cb != Py_None && !PyCallable_Check(cb)) {
		PyErr_SetString(PyExc_TypeError,
				"set_exit_hook: expected a callable or None");
		return NULL;
	}
	Py_XSETREF(self->exit_cb, cb == Py_None ? NULL : Py_NewRef(cb));
	Py_RETURN_NONE;
}

/* Call fn(ctx, err) with the GIL released: its result in *out, or -1 with
 * the Python exception set (a closed context, an exception a callback
 * raised meanwhile, or fn's error). */
static int _ctx_call(CtxObject *self, int (*fn)(elastic_ctx_t *, elastic_error_t *),
		     int *out)
{
	elastic_error_t err = {""};
	int rc, e;
	if (_check_open(self))
		return -1;
	Py_BEGIN_ALLOW_THREADS rc = fn(self->ctx, &err);
	e = errno;
	Py_END_ALLOW_THREADS if (_unstash(self)) return -1;
	if (rc < 0) {
		_raise(e, &err, NULL);
		return -1;
	}
	*out = rc;
	return 0;
}

static PyObject *Ctx_start(CtxObject *self, PyObject *noargs)
{
	int rc;
	if (_ctx_call(self, elastic_start, &rc) < 0)
		return NULL;
	Py_RETURN_NONE;
}

static PyObject *Ctx_step_begin(CtxObject *self, PyObject *noargs)
{
	int rc;
	if (_ctx_call(self, elastic_step_begin, &rc) < 0)
		return NULL;
	Py_RETURN_NONE;
}

static PyObject *Ctx_step_commit(CtxObject *self, PyObject *noargs)
{
	int rc;
	if (_ctx_call(self, elastic_step_commit, &rc) < 0)
		return NULL;
	return PyLong_FromLong(rc);
}

static PyObject *Ctx_step_updated(CtxObject *self, PyObject *noargs)
{
	int rc;
	if (_ctx_call(self, elastic_step_updated, &rc) < 0)
		return NULL;
	Py_RETURN_NONE;
}

static PyObject *Ctx_step_fail(CtxObject *self, PyObject *noargs)
{
	if (_check_open(self))
		return NULL;
	elastic_step_fail(self->ctx);
	Py_RETURN_NONE;
}

static PyObject *Ctx_reform_now(CtxObject *self, PyObject *noargs)
{
	if (_check_open(self))
		return NULL;
	elastic_reform_now(self->ctx); /* exits 75 */
	Py_RETURN_NONE;
}

/* MPI datatype of a buffer's items (struct-module format). */
static MPI_Datatype _mpi_type(const Py_buffer *v)
{
	const char *f = v->format ? v->format : "B";
	if (*f == '@' || *f == '=' || *f == '<')
		f++;
	if (!strcmp(f, "f") && v->itemsize == 4)
		return MPI_FLOAT;
	if (!strcmp(f, "d") && v->itemsize == 8)
		return MPI_DOUBLE;
	if ((!strcmp(f, "q") || !strcmp(f, "l")) && v->itemsize == 8)
		return MPI_INT64_T;
	if (!strcmp(f, "i") && v->itemsize == 4)
		return MPI_INT32_T;
	return MPI_DATATYPE_NULL;
}

/* Sum (or max, min) buf over the ranks in place (MPI_IN_PLACE). True, or
 * False when the world failed in this step (the step is redone: go on to
 * step_commit); Error for misuse. */
static PyObject *Ctx_allreduce(CtxObject *self, PyObject *args)
{
	PyObject *obj;
	const char *opname = "sum";
	Py_buffer v;
	MPI_Datatype t;
	MPI_Op op;
	int rc, e;

	if (!PyArg_ParseTuple(args, "O|s", &obj, &opname) || _check_open(self))
		return NULL;
	if (!strcmp(opname, "sum"))
		op = MPI_SUM;
	else if (!strcmp(opname, "max"))
		op = MPI_MAX;
	else if (!strcmp(opname, "min"))
		op = MPI_MIN;
	else {
		PyErr_Format(PyExc_ValueError,
			     "allreduce: op '%s' is not sum, max or min", opname);
		return NULL;
	}
	if (PyObject_GetBuffer(obj, &v,
			       PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
		return NULL;
	if ((t = _mpi_type(&v)) == MPI_DATATYPE_NULL) {
		PyErr_Format(
			PyExc_TypeError,
			"allreduce: items of format '%s' (%zd bytes) are not float32, float64, int32 or int64",
			v.format ? v.format : "B", v.itemsize);
		PyBuffer_Release(&v);
		return NULL;
	}
	if (v.len / v.itemsize > INT32_MAX) {
		PyBuffer_Release(&v);
		PyErr_SetString(PyExc_OverflowError, "allreduce: more than 2^31-1 items");
		return NULL;
	}
	Py_BEGIN_ALLOW_THREADS rc = elastic_allreduce(self->ctx, MPI_IN_PLACE, v.buf,
						      (int)(v.len / v.itemsize), t, op);
	e = errno;
	Py_END_ALLOW_THREADS PyBuffer_Release(&v);
	if (_unstash(self))
		return NULL;
	if (rc == 0)
		Py_RETURN_TRUE;
	if (e == EPIPE || e == ECANCELED || e == EIO)
		Py_RETURN_FALSE;
	return _raise(e, NULL, "elastic_allreduce failed");
}

/* Concatenation over the ranks (rank order) of each rank's int64 list. */
static PyObject *Ctx_allgather(CtxObject *self, PyObject *args)
{
	PyObject *seq, *fast, *out = NULL;
	int64_t *send = NULL, *recv = NULL;
	Py_ssize_t n;
	int cap, total = 0, rc, e, size;

	if (!PyArg_ParseTuple(args, "Oi", &seq, &cap) || _check_open(self))
		return NULL;
	if (cap < 0) {
		PyErr_SetString(PyExc_ValueError, "allgather: cap < 0");
		return NULL;
	}
	if (!(fast = PySequence_Fast(seq, "allgather: expected a sequence of int")))
		return NULL;
	n = PySequence_Fast_GET_SIZE(fast);
	size = elastic_size(self->ctx);
	send = PyMem_Malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
	recv = PyMem_Malloc(sizeof(int64_t) * (size_t)(cap ? cap : 1));
	if (!send || !recv) {
		PyErr_NoMemory();
		goto out;
	}
	for (Py_ssize_t i = 0; i < n; i++) {
		send[i] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(fast, i));
		if (send[i] == -1 && PyErr_Occurred())
			goto out;
	}
	(void)size;
	Py_BEGIN_ALLOW_THREADS rc =
		elastic_allgather_i64(self->ctx, send, (int)n, recv, cap, &total);
	e = errno;
	Py_END_ALLOW_THREADS if (_unstash(self)) goto out;
	if (rc < 0) {
		if (e == EPIPE || e == ECANCELED || e == EIO) {
			out = Py_NewRef(Py_None);
			goto out;
		}
		_raise(e, NULL, "elastic_allgather_i64 failed");
		goto out;
	}
	if (!(out = PyList_New(total)))
		goto out;
	for (int i = 0; i < total; i++)
		PyList_SET_ITEM(out, i, PyLong_FromLongLong(recv[i]));
out:
	Py_DECREF(fast);
	PyMem_Free(send);
	PyMem_Free(recv);
	return out;
}

static PyObject *Ctx_complete(CtxObject *self, PyObject *noargs)
{
	int rc;
	if (_ctx_call(self, elastic_complete, &rc) < 0)
		return NULL;
	Py_RETURN_NONE;
}

/* Destroy the context and finalize MPI under the library's guard. */
static PyObject *Ctx_finalize(CtxObject *self, PyObject *args)
{
	int status = 0, rc;
	elastic_ctx_t *ctx = self->ctx;
	if (!PyArg_ParseTuple(args, "|i", &status))
		return NULL;
	self->ctx = NULL;
	Py_BEGIN_ALLOW_THREADS rc = elastic_finalize(ctx, status);
	Py_END_ALLOW_THREADS _release_bufs(self);
	return PyLong_FromLong(rc);
}

/* Destroy the context without finalizing MPI (keeps the node snapshot). */
static PyObject *Ctx_close(CtxObject *self, PyObject *noargs)
{
	elastic_ctx_t *ctx = self->ctx;
	self->ctx = NULL;
	Py_BEGIN_ALLOW_THREADS elastic_destroy(ctx);
	Py_END_ALLOW_THREADS _release_bufs(self);
	Py_RETURN_NONE;
}

/* True while SIGUSR1 is still the handler elastic_init left (planned
 * re-forms work); False once someone (Python's signal module, a library)
 * replaced it. */
static PyObject *Ctx_stop_signal_intact(CtxObject *self, PyObject *noargs)
{
	struct sigaction now;
	if (!self->usr1_known || sigaction(SIGUSR1, NULL, &now) < 0)
		Py_RETURN_TRUE;
	return PyBool_FromLong(now.sa_handler == self->usr1.sa_handler);
}

static PyObject *Ctx_stats(CtxObject *self, PyObject *noargs)
{
	struct elastic_stats st;
	if (_check_open(self))
		return NULL;
	elastic_get_stats(self->ctx, &st);
	return Py_BuildValue(
		"{s:K,s:K,s:K,s:d,s:d,s:K,s:i,s:K,s:K}", "commits",
		(unsigned long long)st.commits, "redos", (unsigned long long)st.redos,
		"recoveries", (unsigned long long)st.recoveries, "last_recovery_s",
		st.last_recovery_s, "last_failure_time", st.last_failure_time,
		"resumed_step", (unsigned long long)st.resumed_step, "initial_size",
		st.initial_size, "shrinks", (unsigned long long)st.shrinks, "grows",
		(unsigned long long)st.grows);
}

static PyObject *Ctx_env(CtxObject *self, PyObject *noargs)
{
	const struct elastic_env *e;
	PyObject *sizes;
	if (_check_open(self))
		return NULL;
	e = elastic_get_env(self->ctx);
	if (!(sizes = PyTuple_New(e->nsizes)))
		return NULL;
	for (int i = 0; i < e->nsizes; i++)
		PyTuple_SET_ITEM(sizes, i, PyLong_FromLong(e->sizes[i]));
	return Py_BuildValue("{s:s,s:s,s:i,s:i,s:N,s:i,s:d,s:d}", "job_id", e->job_id,
			     "job_stamp", e->job_stamp, "min_gpus", e->min_gpus,
			     "max_gpus", e->max_gpus, "sizes", sizes, "debug", e->debug,
			     "watchdog_s", e->watchdog_s, "step_timeout_s",
			     e->step_timeout_s);
}

/* The NCCL communicator (ncclComm_t as an int), created on first use. */
static PyObject *Ctx_nccl_comm(CtxObject *self, PyObject *noargs)
{
	elastic_error_t err = {""};
	void *comm = NULL;
	int rc, e;
	if (_check_open(self))
		return NULL;
	Py_BEGIN_ALLOW_THREADS rc = elastic_nccl_comm(self->ctx, &comm, &err);
	e = errno;
	Py_END_ALLOW_THREADS if (rc < 0) return _raise(e, &err, NULL);
	return PyLong_FromVoidPtr(comm);
}

/* Sum a CUDA buffer (a device pointer as an int, e.g. tensor.data_ptr()) of
 * count float32/float64 items over the ranks in place with NCCL. True, or
 * False when the world failed in this step (go on to step_commit). */
static PyObject *Ctx_gpu_allreduce(CtxObject *self, PyObject *args, PyObject *kw)
{
	static char *names[] = {"ptr", "count", "dtype", "stream", NULL};
	elastic_error_t err = {""};
	unsigned long long ptr, stream = 0;
	Py_ssize_t count;
	const char *dtype = "float32";
	MPI_Datatype t;
	int rc, e;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "Kn|sK", names, &ptr, &count, &dtype,
					 &stream) ||
	    _check_open(self))
		return NULL;
	if (!strcmp(dtype, "float32"))
		t = MPI_FLOAT;
	else if (!strcmp(dtype, "float64"))
		t = MPI_DOUBLE;
	else {
		PyErr_Format(PyExc_ValueError,
			     "gpu_allreduce: dtype '%s' is not float32 or float64",
			     dtype);
		return NULL;
	}
	if (count < 0 || (!ptr && count)) {
		PyErr_SetString(
			PyExc_ValueError,
			"gpu_allreduce: count must be >= 0 and ptr a device pointer");
		return NULL;
	}
	Py_BEGIN_ALLOW_THREADS rc =
		elastic_gpu_allreduce(self->ctx, (void *)(uintptr_t)ptr, (size_t)count, t,
				      (void *)(uintptr_t)stream, &err);
	e = errno;
	Py_END_ALLOW_THREADS if (_unstash(self)) return NULL;
	if (rc == 0)
		Py_RETURN_TRUE;
	if (e == EIO || e == ECANCELED)
		Py_RETURN_FALSE;
	return _raise(e, &err, NULL);
}

#define _GETTER(name, expr)                                                              \
	static PyObject *Ctx_get_##name(CtxObject *self, void *closure)                  \
	{                                                                                \
		if (_check_open(self))                                                   \
			return NULL;                                                     \
		return expr;                                                             \
	}
_GETTER(rank, PyLong_FromLong(elastic_rank(self->ctx)))
_GETTER(size, PyLong_FromLong(elastic_size(self->ctx)))
_GETTER(step, PyLong_FromUnsignedLongLong(elastic_step(self->ctx)))
_GETTER(resumed, PyBool_FromLong(elastic_resumed(self->ctx)))
/* the MPI_Comm handle of the current world (for MPI.Comm.fromhandle in mpi4py) */
_GETTER(comm_handle, PyLong_FromVoidPtr((void *)elastic_comm(self->ctx)))

static PyObject *Ctx_get_closed(CtxObject *self, void *closure)
{
	return PyBool_FromLong(self->ctx == NULL);
}

static PyGetSetDef Ctx_getset[] = {
	{"rank", (getter)Ctx_get_rank, NULL, "rank in the current world", NULL},
	{"size", (getter)Ctx_get_size, NULL, "size of the current world", NULL},
	{"step", (getter)Ctx_get_step, NULL, "committed steps = index of the next step",
	 NULL},
	{"resumed", (getter)Ctx_get_resumed, NULL, "resumed from a snapshot", NULL},
	{"comm_handle", (getter)Ctx_get_comm_handle, NULL, "MPI_Comm of the world", NULL},
	{"closed", (getter)Ctx_get_closed, NULL, "destroyed or finalized", NULL},
	{NULL},
};

static PyMethodDef Ctx_methods[] = {
	{"register", (PyCFunction)Ctx_register, METH_VARARGS,
	 "register(name, buffer): elastic_register of a writable C-contiguous buffer, held until close"},
	{"set_commit_mode", (PyCFunction)Ctx_set_commit_mode, METH_VARARGS,
	 "set_commit_mode(COPY_AT_COMMIT or UPDATE_AFTER_COMMIT), before the first step"},
	{"set_watchdog", (PyCFunction)Ctx_set_watchdog, METH_VARARGS,
	 "set_watchdog(seconds): recovery watchdog, 0 = off"},
	{"set_log", (PyCFunction)Ctx_set_log, METH_VARARGS,
	 "set_log(fn(level, msg) or None, level=LOG_INFO); what fn raises reaches the caller of the call that logged"},
	{"set_change_callback", (PyCFunction)Ctx_set_change_callback, METH_VARARGS,
	 "set_change_callback(fn() or None): after the world changed; what fn raises reaches the caller"},
	{"set_exit_hook", (PyCFunction)Ctx_set_exit_hook, METH_VARARGS,
	 "set_exit_hook(fn(status, why) or None): before the library's own _exit; sys.stdout/stderr are flushed after it"},
	{"start", (PyCFunction)Ctx_start, METH_NOARGS,
	 "elastic_start (collective, GIL released): a relaunch resumes its snapshot here"},
	{"step_begin", (PyCFunction)Ctx_step_begin, METH_NOARGS,
	 "elastic_step_begin (GIL released)"},
	{"step_commit", (PyCFunction)Ctx_step_commit, METH_NOARGS,
	 "elastic_step_commit (GIL released): COMMITTED or REDO"},
	{"step_updated", (PyCFunction)Ctx_step_updated, METH_NOARGS,
	 "elastic_step_updated (GIL released): the committed step's update is applied"},
	{"step_fail", (PyCFunction)Ctx_step_fail, METH_NOARGS,
	 "elastic_step_fail: the step is redone"},
	{"reform_now", (PyCFunction)Ctx_reform_now, METH_NOARGS,
	 "elastic_reform_now: the job re-forms from the last committed step (exit 75)"},
	{"allreduce", (PyCFunction)Ctx_allreduce, METH_VARARGS,
	 "allreduce(buffer, op='sum'): in place (MPI_IN_PLACE), GIL released; False when the world failed in this step"},
	{"allgather", (PyCFunction)Ctx_allgather, METH_VARARGS,
	 "allgather(ints, cap) -> list in rank order, or None when the world failed in this step"},
	{"complete", (PyCFunction)Ctx_complete, METH_NOARGS,
	 "elastic_complete (collective): removes this job's node snapshots"},
	{"finalize", (PyCFunction)Ctx_finalize, METH_VARARGS,
	 "finalize(status=0): elastic_finalize (destroy + guarded MPI_Finalize)"},
	{"close", (PyCFunction)Ctx_close, METH_NOARGS,
	 "elastic_destroy without MPI_Finalize (keeps the node snapshot)"},
	{"stop_signal_intact", (PyCFunction)Ctx_stop_signal_intact, METH_NOARGS,
	 "False once SIGUSR1 lost the handler elastic_init installed"},
	{"stats", (PyCFunction)Ctx_stats, METH_NOARGS, "elastic_get_stats as a dict"},
	{"env", (PyCFunction)Ctx_env, METH_NOARGS,
	 "the parsed ELASTIC_* environment as a dict"},
	{"nccl_comm", (PyCFunction)Ctx_nccl_comm, METH_NOARGS,
	 "elastic_nccl_comm: the ncclComm_t as an int (collective); ENODEV without a GPU"},
	{"gpu_allreduce", (PyCFunction)(void (*)(void))Ctx_gpu_allreduce,
	 METH_VARARGS | METH_KEYWORDS,
	 "gpu_allreduce(ptr, count, dtype='float32', stream=0) -> bool: sum a CUDA buffer "
	 "over the ranks in place with NCCL (elastic_gpu_allreduce); False when the world "
	 "failed in this step; Error ENODEV without NCCL or a GPU"},
	{NULL},
};

static PyTypeObject CtxType = {
	PyVarObject_HEAD_INIT(NULL, 0).tp_name = "slurm_elastic._core.Context",
	.tp_basicsize = sizeof(CtxObject),
	.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
	.tp_doc =
		"libelastic context (elastic_init on MPI_COMM_WORLD); see slurm_elastic.Context",
	.tp_new = PyType_GenericNew,
	.tp_init = (initproc)Ctx_init,
	.tp_dealloc = (destructor)Ctx_dealloc,
	.tp_methods = Ctx_methods,
	.tp_getset = Ctx_getset,
};

/* ---- Sampler ---- */

typedef struct {
	PyObject_HEAD elastic_sampler_t *s;
	PyObject *ctx; /* the context it is registered with (kept alive) */
} SamplerObject;

static int Sampler_init(SamplerObject *self, PyObject *args, PyObject *kw)
{
	static char *kws[] = {"nsamples", "seed", "shuffle", NULL};
	unsigned long long n, seed = 0;
	int shuffle = 1;
	elastic_error_t err = {""};

	if (!PyArg_ParseTupleAndKeywords(args, kw, "K|Kp", kws, &n, &seed, &shuffle))
		return -1;
	if (self->s) {
		PyErr_SetString(PyExc_RuntimeError, "Sampler.__init__ called twice");
		return -1;
	}
	if (elastic_sampler_create(n, seed, shuffle, &self->s, &err) < 0) {
		_raise(errno, &err, NULL);
		return -1;
	}
	return 0;
}

static void Sampler_dealloc(SamplerObject *self)
{
	elastic_sampler_destroy(self->s);
	Py_CLEAR(self->ctx);
	Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Sampler_register(SamplerObject *self, PyObject *args)
{
	CtxObject *c;
	elastic_error_t err = {""};
	if (!PyArg_ParseTuple(args, "O!", &CtxType, &c) || _check_open(c))
		return NULL;
	if (elastic_sampler_register(c->ctx, self->s, &err) < 0)
		return _raise(errno, &err, NULL);
	Py_XSETREF(self->ctx, Py_NewRef((PyObject *)c));
	Py_RETURN_NONE;
}

static PyObject *Sampler_step_samples(SamplerObject *self, PyObject *args)
{
	int global;
	if (!PyArg_ParseTuple(args, "i", &global))
		return NULL;
	return PyLong_FromUnsignedLongLong(elastic_sampler_step_samples(self->s, global));
}

static PyObject *Sampler_indices(SamplerObject *self, PyObject *args)
{
	struct elastic_batch_plan p;
	elastic_error_t err = {""};
	uint64_t *idx;
	size_t n = 0;
	PyObject *out;

	if (!PyArg_ParseTuple(args, "(iiiii)", &p.active, &p.share, &p.offset, &p.micro,
			      &p.accum))
		return NULL;
	if (p.share < 0) {
		PyErr_SetString(PyExc_ValueError, "indices: plan share < 0");
		return NULL;
	}
	if (!(idx = PyMem_Malloc(sizeof(*idx) * (size_t)(p.share ? p.share : 1))))
		return PyErr_NoMemory();
	if (elastic_sampler_indices(self->s, &p, idx, (size_t)p.share, &n, &err) < 0) {
		PyMem_Free(idx);
		return _raise(errno, &err, NULL);
	}
	if ((out = PyList_New((Py_ssize_t)n)))
		for (size_t i = 0; i < n; i++)
			PyList_SET_ITEM(out, (Py_ssize_t)i,
					PyLong_FromUnsignedLongLong(idx[i]));
	PyMem_Free(idx);
	return out;
}

static PyObject *Sampler_advance(SamplerObject *self, PyObject *args)
{
	int global;
	if (!PyArg_ParseTuple(args, "i", &global))
		return NULL;
	if (global < 1) {
		PyErr_SetString(PyExc_ValueError, "advance: global batch < 1");
		return NULL;
	}
	return PyBool_FromLong(elastic_sampler_advance(self->s, global));
}

static PyObject *Sampler_seek(SamplerObject *self, PyObject *args)
{
	unsigned long long epoch, consumed;
	elastic_error_t err = {""};
	if (!PyArg_ParseTuple(args, "KK", &epoch, &consumed))
		return NULL;
	if (elastic_sampler_seek(self->s, epoch, consumed, &err) < 0)
		return _raise(errno, &err, NULL);
	Py_RETURN_NONE;
}

static PyObject *Sampler_get_epoch(SamplerObject *self, void *c)
{
	return PyLong_FromUnsignedLongLong(elastic_sampler_epoch(self->s));
}

static PyObject *Sampler_get_consumed(SamplerObject *self, void *c)
{
	return PyLong_FromUnsignedLongLong(elastic_sampler_consumed(self->s));
}

static PyGetSetDef Sampler_getset[] = {
	{"epoch", (getter)Sampler_get_epoch, NULL, "current epoch", NULL},
	{"consumed", (getter)Sampler_get_consumed, NULL, "samples used in this epoch",
	 NULL},
	{NULL},
};

static PyMethodDef Sampler_methods[] = {
	{"register", (PyCFunction)Sampler_register, METH_VARARGS,
	 "register(context): the position becomes registered state"},
	{"step_samples", (PyCFunction)Sampler_step_samples, METH_VARARGS,
	 "step_samples(global) -> samples in this step's global batch"},
	{"indices", (PyCFunction)Sampler_indices, METH_VARARGS,
	 "indices(plan tuple) -> this rank's sample indices of the step"},
	{"advance", (PyCFunction)Sampler_advance, METH_VARARGS,
	 "advance(global) -> True when an epoch completed"},
	{"seek", (PyCFunction)Sampler_seek, METH_VARARGS, "seek(epoch, consumed)"},
	{NULL},
};

static PyTypeObject SamplerType = {
	PyVarObject_HEAD_INIT(NULL, 0).tp_name = "slurm_elastic._core.Sampler",
	.tp_basicsize = sizeof(SamplerObject),
	.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
	.tp_doc = "libelastic elastic sampler; see slurm_elastic.ElasticSampler",
	.tp_new = PyType_GenericNew,
	.tp_init = (initproc)Sampler_init,
	.tp_dealloc = (destructor)Sampler_dealloc,
	.tp_methods = Sampler_methods,
	.tp_getset = Sampler_getset,
};

/* ---- module functions ---- */

static PyObject *py_batch_plan(PyObject *self, PyObject *args)
{
	int global, max_micro, size, rank, sizes[64], nsizes = 0;
	PyObject *seq = NULL, *fast;
	struct elastic_batch_plan p;
	elastic_error_t err = {""};

	if (!PyArg_ParseTuple(args, "iiii|O", &global, &max_micro, &size, &rank, &seq))
		return NULL;
	if (seq && seq != Py_None) {
		if (!(fast = PySequence_Fast(seq,
					     "batch_plan: sizes must be a sequence")))
			return NULL;
		nsizes = (int)PySequence_Fast_GET_SIZE(fast);
		if (nsizes > 64) {
			Py_DECREF(fast);
			PyErr_SetString(PyExc_ValueError,
					"batch_plan: more than 64 sizes");
			return NULL;
		}
		for (int i = 0; i < nsizes; i++)
			sizes[i] = (int)PyLong_AsLong(PySequence_Fast_GET_ITEM(fast, i));
		Py_DECREF(fast);
		if (PyErr_Occurred())
			return NULL;
	}
	if (elastic_batch_plan(global, max_micro, size, rank, nsizes ? sizes : NULL,
			       nsizes, &p, &err) < 0)
		return _raise(errno, &err, NULL);
	return Py_BuildValue("(iiiii)", p.active, p.share, p.offset, p.micro, p.accum);
}

static PyMethodDef module_methods[] = {
	{"mpi_init", py_mpi_init, METH_NOARGS,
	 "Initialize MPI (MPI_THREAD_SERIALIZED) unless it is; True if it did."},
	{"mpi_initialized", py_mpi_initialized, METH_NOARGS,
	 "True between MPI_Init and MPI_Finalize"},
	{"batch_plan", py_batch_plan, METH_VARARGS,
	 "batch_plan(global, max_micro, size, rank, sizes=()) -> (active, share, offset, micro, accum)"},
	{NULL},
};

static struct PyModuleDef module = {
	PyModuleDef_HEAD_INIT,
	"slurm_elastic._core",
	"Thin compiled layer over libelastic; use slurm_elastic instead.",
	-1,
	module_methods,
};

PyMODINIT_FUNC PyInit__core(void)
{
	PyObject *m;

	if (PyType_Ready(&CtxType) < 0 || PyType_Ready(&SamplerType) < 0)
		return NULL;
	if (!(m = PyModule_Create(&module)))
		return NULL;
	Error = PyErr_NewExceptionWithDoc(
		"slurm_elastic.Error",
		"A libelastic call failed: errno and the library's text (an OSError).",
		PyExc_OSError, NULL);
	if (!Error || PyModule_AddObjectRef(m, "Error", Error) < 0 ||
	    PyModule_AddObjectRef(m, "Context", (PyObject *)&CtxType) < 0 ||
	    PyModule_AddObjectRef(m, "Sampler", (PyObject *)&SamplerType) < 0 ||
	    PyModule_AddIntConstant(m, "COMMITTED", ELASTIC_COMMITTED) < 0 ||
	    PyModule_AddIntConstant(m, "REDO", ELASTIC_REDO) < 0 ||
	    PyModule_AddIntConstant(m, "COPY_AT_COMMIT", ELASTIC_COPY_AT_COMMIT) < 0 ||
	    PyModule_AddIntConstant(m, "UPDATE_AFTER_COMMIT",
				    ELASTIC_UPDATE_AFTER_COMMIT) < 0 ||
	    PyModule_AddIntConstant(m, "EXIT_REFORM", ELASTIC_EXIT_REFORM) < 0 ||
	    PyModule_AddIntConstant(m, "LOG_ERROR", ELASTIC_LOG_ERROR) < 0 ||
	    PyModule_AddIntConstant(m, "LOG_WARN", ELASTIC_LOG_WARN) < 0 ||
	    PyModule_AddIntConstant(m, "LOG_INFO", ELASTIC_LOG_INFO) < 0 ||
	    PyModule_AddIntConstant(m, "LOG_DEBUG", ELASTIC_LOG_DEBUG) < 0) {
		Py_DECREF(m);
		return NULL;
	}
	return m;
}
