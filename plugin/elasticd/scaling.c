/* SPDX-License-Identifier: GPL-2.0-or-later */
/* plugin/elasticd/scaling.c: a job's measured scaling (scaling.h). */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scaling.h"

#define _TERMS 4

static void _basis(int n, double phi[_TERMS])
{
	phi[0] = 1.0 / n;
	phi[1] = 1.0;
	phi[2] = log2((double)n);
	phi[3] = n;
}

static int _popcount(int m)
{
	int c = 0;
	for (; m; m &= m - 1)
		c++;
	return c;
}

/* Subsets of the terms in the order ties are decided: fewer terms first,
 * then those with alpha, then by mask. */
static int _subsets(int *out)
{
	int k = 0;
	for (int pop = 1; pop <= _TERMS; pop++)
		for (int alpha = 1; alpha >= 0; alpha--)
			for (int m = 1; m < 1 << _TERMS; m++)
				if (_popcount(m) == pop && (m & 1) == alpha)
					out[k++] = m;
	return k;
}

/* Solve the k x k system a * x = b in place (partial pivoting); -1 if
 * singular. */
static int _solve(double a[_TERMS][_TERMS], double *b, int k)
{
	for (int c = 0; c < k; c++) {
		int p = c;
		for (int r = c + 1; r < k; r++)
			if (fabs(a[r][c]) > fabs(a[p][c]))
				p = r;
		if (!(fabs(a[p][c]) > 1e-300))
			return -1;
		if (p != c) {
			for (int j = 0; j < k; j++) {
				double t = a[c][j];
				a[c][j] = a[p][j];
				a[p][j] = t;
			}
			double t = b[c];
			b[c] = b[p];
			b[p] = t;
		}
		for (int r = c + 1; r < k; r++) {
			double f = a[r][c] / a[c][c];
			for (int j = c; j < k; j++)
				a[r][j] -= f * a[c][j];
			b[r] -= f * b[c];
		}
	}
	for (int c = k - 1; c >= 0; c--) {
		for (int j = c + 1; j < k; j++)
			b[c] -= a[c][j] * b[j];
		b[c] /= a[c][c];
	}
	return 0;
}

void elastic_scaling_fit(struct elastic_scaling *s)
{
	int masks[1 << _TERMS], nm = _subsets(masks);
	double best = INFINITY, total = 0;

	memset(s->coef, 0, sizeof(s->coef));
	s->terms = 0;
	for (int i = 0; i < s->nobs; i++)
		total += s->obs[i].weight;
	for (int mi = 0; mi < nm; mi++) {
		int m = masks[mi], idx[_TERMS], k = 0;
		double a[_TERMS][_TERMS] = {{0}}, b[_TERMS] = {0}, c[_TERMS] = {0}, r = 0;
		int ok = 1;

		if (_popcount(m) > s->nobs)
			continue;
		for (int t = 0; t < _TERMS; t++)
			if (m & 1 << t)
				idx[k++] = t;
		/* weighted normal equations of the relative error of t(n) */
		for (int i = 0; i < s->nobs; i++) {
			double phi[_TERMS], y = 1.0 / s->obs[i].rate;
			double v = s->obs[i].weight / (y * y);
			_basis(s->obs[i].n, phi);
			for (int p = 0; p < k; p++) {
				for (int q = 0; q < k; q++)
					a[p][q] += v * phi[idx[p]] * phi[idx[q]];
				b[p] += v * phi[idx[p]] * y;
			}
		}
		if (_solve(a, b, k) < 0)
			continue;
		for (int p = 0; p < k; p++) {
			if (!isfinite(b[p]) || b[p] < 0)
				ok = 0;
			c[idx[p]] = b[p];
		}
		if (!ok)
			continue;
		for (int i = 0; i < s->nobs; i++) {
			double phi[_TERMS], y = 1.0 / s->obs[i].rate, e = -y;
			_basis(s->obs[i].n, phi);
			for (int t = 0; t < _TERMS; t++)
				e += c[t] * phi[t];
			r += s->obs[i].weight * (e / y) * (e / y);
		}
		/* strictly better only: ties keep the earlier, simpler subset */
		if (r < best - 1e-9 * total) {
			best = r;
			memcpy(s->coef, c, sizeof(s->coef));
			s->terms = _popcount(m);
		}
	}
}

int elastic_scaling_observe(struct elastic_scaling *s, int n, double rate, int64_t now,
			    double half_life)
{
	struct elastic_scaling_obs *o = NULL;

	if (!s || n <= 0 || !isfinite(rate) || rate <= 0) {
		errno = EINVAL;
		return -1;
	}
	for (int i = 0; i < s->nobs; i++)
		if (s->obs[i].n == n)
			o = &s->obs[i];
	if (!o && s->nobs < ELASTIC_SCALING_SIZES) {
		o = &s->obs[s->nobs++];
		*o = (struct elastic_scaling_obs){.n = n};
	} else if (!o) {
		o = &s->obs[0];
		for (int i = 1; i < s->nobs; i++)
			if (s->obs[i].when < o->when)
				o = &s->obs[i];
		*o = (struct elastic_scaling_obs){.n = n};
	}
	double kept = 0;
	if (o->weight > 0 && half_life > 0) {
		double age = now > o->when ? (double)(now - o->when) : 0;
		kept = o->weight * exp2(-age / half_life);
	}
	o->rate = (o->rate * kept + rate) / (kept + 1);
	o->weight = kept + 1;
	o->when = now;
	elastic_scaling_fit(s);
	return 0;
}

double elastic_scaling_rate(const struct elastic_scaling *s, int n)
{
	double phi[_TERMS], t = 0;

	if (!s || !s->terms || n <= 0)
		return 0;
	_basis(n, phi);
	for (int i = 0; i < _TERMS; i++)
		t += s->coef[i] * phi[i];
	return t > 0 ? 1.0 / t : 0;
}

double elastic_scaling_speedup(const struct elastic_scaling *s, int n)
{
	double one = elastic_scaling_rate(s, 1);
	return one > 0 ? elastic_scaling_rate(s, n) / one : 0;
}

void elastic_scaling_seen(const struct elastic_scaling *s, int *lo, int *hi)
{
	*lo = *hi = 0;
	for (int i = 0; s && i < s->nobs; i++) {
		if (!*lo || s->obs[i].n < *lo)
			*lo = s->obs[i].n;
		if (s->obs[i].n > *hi)
			*hi = s->obs[i].n;
	}
}

enum elastic_scaling_confidence
elastic_scaling_confidence(const struct elastic_scaling *s, int n)
{
	int lo, hi;

	elastic_scaling_seen(s, &lo, &hi);
	if (!hi || n <= 0)
		return ELASTIC_SCALING_UNKNOWN;
	for (int i = 0; i < s->nobs; i++)
		if (s->obs[i].n == n)
			return ELASTIC_SCALING_MEASURED;
	return n > lo && n < hi ? ELASTIC_SCALING_INTERPOLATED
				: ELASTIC_SCALING_EXTRAPOLATED;
}

const char *elastic_scaling_confidence_name(enum elastic_scaling_confidence c)
{
	switch (c) {
	case ELASTIC_SCALING_UNKNOWN:
		return "unknown";
	case ELASTIC_SCALING_EXTRAPOLATED:
		return "extrapolated";
	case ELASTIC_SCALING_INTERPOLATED:
		return "interpolated";
	case ELASTIC_SCALING_MEASURED:
		return "measured";
	}
	return NULL;
}

static int _row(const struct elastic_scaling *s, int n, char *buf, size_t len)
{
	char measured[24] = "";
	double one = elastic_scaling_rate(s, 1);

	for (int i = 0; i < s->nobs; i++)
		if (s->obs[i].n == n)
			snprintf(measured, sizeof(measured), "%.4g", s->obs[i].rate);
	return snprintf(
		buf, len, "%d:%s:%.4g:%.2f:%c", n, measured, elastic_scaling_rate(s, n),
		one > 0 ? elastic_scaling_rate(s, n) / one / n : 0,
		elastic_scaling_confidence_name(elastic_scaling_confidence(s, n))[0]);
}

static int _cmp_int(const void *a, const void *b)
{
	return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b);
}

int elastic_scaling_table(const struct elastic_scaling *s, const int *also, int nalso,
			  char *buf, size_t len)
{
	int want[ELASTIC_SCALING_SIZES + 4], nw,
		nfix = 0, keep[ELASTIC_SCALING_SIZES + 4], nk = 0,
		ref = nalso > 0 && also[0] > 0 ? also[0] : 1;
	size_t off = 0;
	char row[96];

	if (len)
		buf[0] = '\0';
	if (!s || !s->nobs || !len)
		return 0;
	/* candidates, most wanted first: also[], then the measured sizes
	 * nearest to also[0] */
	for (int i = 0; i < nalso && nfix < 4; i++)
		if (also[i] > 0)
			want[nfix++] = also[i];
	nw = nfix;
	for (int i = 0; i < s->nobs; i++) {
		int j = nw++;
		want[j] = s->obs[i].n;
		for (; j > nfix && fabs(log2((double)want[j] / ref)) <
					   fabs(log2((double)want[j - 1] / ref));
		     j--) {
			int x = want[j];
			want[j] = want[j - 1];
			want[j - 1] = x;
		}
	}
	for (int i = 0; i < nw; i++) {
		int dup = 0, w;
		for (int k = 0; k < nk; k++)
			dup |= keep[k] == want[i];
		if (dup)
			continue;
		w = _row(s, want[i], row, sizeof(row));
		if (w < 0 || off + (off ? 1 : 0) + (size_t)w >= len)
			continue;
		off += (off ? 1 : 0) + (size_t)w;
		keep[nk++] = want[i];
	}
	qsort(keep, (size_t)nk, sizeof(*keep), _cmp_int);
	off = 0;
	for (int k = 0; k < nk; k++) {
		if (k)
			buf[off++] = ',';
		off += (size_t)_row(s, keep[k], buf + off, len - off);
	}
	return (int)off;
}

int elastic_scaling_format(const struct elastic_scaling *s, char *buf, size_t len)
{
	size_t off = 0;
	int w;

	if (!s || (!buf && len)) {
		errno = EINVAL;
		return -1;
	}
	if (len)
		buf[0] = '\0';
	for (int i = 0; i < s->nobs; i++) {
		const struct elastic_scaling_obs *o = &s->obs[i];
		w = snprintf(off < len ? buf + off : NULL, off < len ? len - off : 0,
			     "%s%d:%.9g:%.6g:%lld", i ? "," : "", o->n, o->rate,
			     o->weight, (long long)o->when);
		if (w < 0)
			return -1;
		off += (size_t)w;
	}
	return (int)off;
}

int elastic_scaling_parse(struct elastic_scaling *s, const char *line)
{
	struct elastic_scaling t = {0};
	const char *p = line;

	if (!s || !line)
		goto bad;
	while (*p) {
		struct elastic_scaling_obs o;
		long long when;
		char *end;
		if (t.nobs == ELASTIC_SCALING_SIZES)
			goto bad;
		errno = 0;
		o.n = (int)strtol(p, &end, 10);
		if (end == p || *end != ':' || o.n <= 0)
			goto bad;
		o.rate = strtod(p = end + 1, &end);
		if (end == p || *end != ':' || !isfinite(o.rate) || o.rate <= 0)
			goto bad;
		o.weight = strtod(p = end + 1, &end);
		if (end == p || *end != ':' || !isfinite(o.weight) || o.weight <= 0)
			goto bad;
		when = strtoll(p = end + 1, &end, 10);
		if (end == p || (*end && *end != ',') || when < 0 || errno)
			goto bad;
		o.when = when;
		for (int i = 0; i < t.nobs; i++)
			if (t.obs[i].n == o.n)
				goto bad;
		t.obs[t.nobs++] = o;
		p = *end ? end + 1 : end;
		if (*end && !*p)
			goto bad;
	}
	elastic_scaling_fit(&t);
	*s = t;
	return 0;
bad:
	errno = EINVAL;
	return -1;
}
