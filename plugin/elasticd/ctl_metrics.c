/* SPDX-License-Identifier: GPL-2.0-or-later */
/* plugin/elasticd/ctl_metrics.c: the controller's state (ctl_int.h) as
 * OpenMetrics text, for the metrics endpoint (metrics.c). */
#include "config.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "channel.h"
#include "ctl.h"
#include "ctl_int.h"
#include "log.h"
#include "slurm.h"

/* A label value: backslash, double quote and newline escaped. */
static void _label(FILE *f, const char *v)
{
	for (; *v; v++) {
		if (*v == '\\' || *v == '"')
			fprintf(f, "\\%c", *v);
		else if (*v == '\n')
			fputs("\\n", f);
		else
			fputc(*v, f);
	}
}

static void _family(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# TYPE %s %s\n# HELP %s %s\n", name, type, name, help);
}

/* The jobs' labels: jobid, user (then more, or the end). */
static void _job_labels(FILE *f, const char *name, const struct ed_jobrt *rt)
{
	fprintf(f, "%s{jobid=\"%u\",user=\"", name, rt->job);
	_label(f, rt->user[0] ? rt->user : "unknown");
	fputc('"', f);
}

/* A bound as OpenMetrics writes a canonical float (1.0, 0.25). */
static void _le(FILE *f, double v)
{
	char b[32];
	snprintf(b, sizeof(b), "%g", v);
	fprintf(f, "%s%s", b, strpbrk(b, ".e") ? "" : ".0");
}

/* The end of bucket b's line of a histogram with nb buckets (bounds le, the
 * last +Inf): its bound, then its cumulative count. */
static void _bucket_end(FILE *f, int b, int nb, const double *le, uint64_t cum)
{
	fputs("le=\"", f);
	if (b < nb - 1)
		_le(f, le[b]);
	else
		fputs("+Inf", f);
	fprintf(f, "\"} %" PRIu64 "\n", cum);
}

/* Per job that reported: re-forms by cause, resizes in place by kind
 * (counters) and recovery seconds (histogram), as elastic-run last said:
 * its counts are cumulative, 0 until it sends any. */
static void _recovery_families(const struct ed_ctl *c, FILE *f)
{
	_family(f, "slurm_elastic_job_reforms", "counter",
		"Relaunches of an elastic job's mpirun by elastic-run, by cause");
	for (int i = 0; i < c->njobs; i++)
		for (int k = 0; c->jobs[i].reported && k < ELASTIC_REFORM_CAUSES; k++) {
			_job_labels(f, "slurm_elastic_job_reforms_total", &c->jobs[i]);
			fprintf(f, ",cause=\"%s\"} %" PRIu32 "\n",
				elastic_reform_cause_name(k), c->jobs[i].rec.reforms[k]);
		}
	_family(f, "slurm_elastic_job_resizes_in_place", "counter",
		"Resizes of an elastic job inside its running mpirun (no relaunch), by kind");
	for (int i = 0; i < c->njobs; i++)
		for (int k = 0; c->jobs[i].reported && k < ELASTIC_RESIZE_KINDS; k++) {
			_job_labels(f, "slurm_elastic_job_resizes_in_place_total",
				    &c->jobs[i]);
			fprintf(f, ",kind=\"%s\"} %" PRIu32 "\n",
				elastic_resize_kind_name(k), c->jobs[i].rec.in_place[k]);
		}
	_family(f, "slurm_elastic_job_recovery_seconds", "histogram",
		"From a re-form's or resize's event to the first step committed after it");
	for (int i = 0; i < c->njobs; i++) {
		const struct ed_jobrt *rt = &c->jobs[i];
		uint64_t cum = 0;
		if (!rt->reported)
			continue;
		for (int b = 0; b < ELASTIC_RECOVERY_BUCKETS; b++) {
			cum += rt->rec.bucket[b];
			_job_labels(f, "slurm_elastic_job_recovery_seconds_bucket", rt);
			fputc(',', f);
			_bucket_end(f, b, ELASTIC_RECOVERY_BUCKETS, elastic_recovery_le,
				    cum);
		}
		_job_labels(f, "slurm_elastic_job_recovery_seconds_sum", rt);
		fprintf(f, "} %.3f\n", (double)rt->rec.sum_ms / 1e3);
		_job_labels(f, "slurm_elastic_job_recovery_seconds_count", rt);
		fprintf(f, "} %" PRIu64 "\n", cum);
	}
}

/* Each job's measured scaling: the average rate at each size it was
 * measured at, and the efficiency its model predicts at the GPUs it holds
 * (speedup / GPUs; the throughput policy's measure). */
static void _scaling_families(const struct ed_ctl *c, FILE *f)
{
	_family(f, "slurm_elastic_job_measured_samples_per_second", "gauge",
		"An elastic job's training throughput measured at a GPU count (recent measurements weigh more)");
	for (int i = 0; i < c->njobs; i++) {
		const struct ed_jobrt *rt = &c->jobs[i];
		for (int k = 0; k < rt->scal.nobs; k++) {
			_job_labels(f, "slurm_elastic_job_measured_samples_per_second",
				    rt);
			fprintf(f, ",gpus=\"%d\"} %.3f\n", rt->scal.obs[k].n,
				rt->scal.obs[k].rate);
		}
	}
	_family(f, "slurm_elastic_job_predicted_samples_per_second", "gauge",
		"An elastic job's training throughput its measured scaling predicts at the GPUs it holds and at its target (confidence: measured there, interpolated between sizes measured, or extrapolated)");
	for (int i = 0; i < c->njobs; i++) {
		const struct ed_jobrt *rt = &c->jobs[i];
		int at[2] = {rt->cur, rt->target};
		if (!rt->scal.terms)
			continue;
		for (int k = 0; k < 2; k++) {
			if (at[k] <= 0 || (k == 1 && at[1] == at[0]))
				continue;
			_job_labels(f, "slurm_elastic_job_predicted_samples_per_second",
				    rt);
			fprintf(f, ",gpus=\"%d\",confidence=\"%s\"} %.3f\n", at[k],
				elastic_scaling_confidence_name(
					elastic_scaling_confidence(&rt->scal, at[k])),
				elastic_scaling_rate(&rt->scal, at[k]));
		}
	}
	_family(f, "slurm_elastic_job_efficiency", "gauge",
		"Speedup per GPU an elastic job's measured scaling predicts at the GPUs it holds");
	for (int i = 0; i < c->njobs; i++) {
		const struct ed_jobrt *rt = &c->jobs[i];
		if (!rt->scal.terms || rt->cur <= 0)
			continue;
		_job_labels(f, "slurm_elastic_job_efficiency", rt);
		fprintf(f, ",confidence=\"%s\"} %.3f\n",
			elastic_scaling_confidence_name(
				elastic_scaling_confidence(&rt->scal, rt->cur)),
			elastic_scaling_speedup(&rt->scal, rt->cur) / rt->cur);
	}
}

/* How a per-job gauge reads its value from the job's entry. */
enum _value { V_INT, V_U32, V_U64, V_RATE, V_CONNECTED };

/* The per-job families, in the order the text gives them: a gauge read
 * from the job's entry (at off, as kind), or a group of families written by
 * a function of their own. OpenMetrics keeps a family's samples together:
 * each is written for every job before the next. */
static const struct _job_family {
	const char *name, *help;
	enum _value kind;
	size_t off;
	int reported_only; /* only jobs that said HELLO or STATUS */
	void (*group)(const struct ed_ctl *c, FILE *f);
} _job_families[] = {
	{"slurm_elastic_job_gpus",
	 "GPUs an elastic job holds (its allocation and running grants)", V_INT,
	 offsetof(struct ed_jobrt, cur), 0, NULL},
	{"slurm_elastic_job_gpus_target", "GPUs the policy gives an elastic job", V_INT,
	 offsetof(struct ed_jobrt, target), 0, NULL},
	{"slurm_elastic_job_gpus_min", "An elastic job's fewest GPUs (--elastic-gpus)",
	 V_INT, offsetof(struct ed_jobrt, min), 0, NULL},
	{"slurm_elastic_job_gpus_max", "An elastic job's most GPUs (--elastic-gpus)",
	 V_INT, offsetof(struct ed_jobrt, max), 0, NULL},
	{"slurm_elastic_job_ranks",
	 "Ranks an elastic job trains with, as it last reported", V_U32,
	 offsetof(struct ed_jobrt, ranks), 1, NULL},
	{"slurm_elastic_job_step",
	 "Last step an elastic job committed, as it last reported", V_U64,
	 offsetof(struct ed_jobrt, step), 1, NULL},
	{"slurm_elastic_job_samples_per_second",
	 "Training throughput an elastic job last reported", V_RATE,
	 offsetof(struct ed_jobrt, rate), 1, NULL},
	{.group = _scaling_families},
	{"slurm_elastic_job_grants", "Grant jobs an elastic job holds", V_INT,
	 offsetof(struct ed_jobrt, ngrants), 0, NULL},
	{"slurm_elastic_job_channel_connected",
	 "1 while the elastic job's channel connection is up", V_CONNECTED, 0, 0, NULL},
	{.group = _recovery_families},
};

static void _job_gauge(const struct ed_ctl *c, FILE *f, const struct _job_family *g)
{
	_family(f, g->name, "gauge", g->help);
	for (int i = 0; i < c->njobs; i++) {
		const struct ed_jobrt *rt = &c->jobs[i];
		const char *v = (const char *)rt + g->off;
		if (g->reported_only && !rt->reported)
			continue;
		_job_labels(f, g->name, rt);
		fputs("} ", f);
		switch (g->kind) {
		case V_INT:
			fprintf(f, "%d\n", *(const int *)v);
			break;
		case V_U32:
			fprintf(f, "%" PRIu32 "\n", *(const uint32_t *)v);
			break;
		case V_U64:
			fprintf(f, "%" PRIu64 "\n", *(const uint64_t *)v);
			break;
		case V_RATE:
			fprintf(f, "%.3f\n", *(const double *)v);
			break;
		case V_CONNECTED:
			fprintf(f, "%d\n", ed_channel_job_connected(c->ch, rt->job));
			break;
		}
	}
}

/* A cluster-wide gauge: one family, one sample. */
static void _gauge(FILE *f, const char *name, const char *help, int v)
{
	_family(f, name, "gauge", help);
	fprintf(f, "%s %d\n", name, v);
}

void ed_ctl_metrics(void *arg, FILE *f)
{
	const struct ed_ctl *c = arg;
	uint64_t now = ed_now_ms();
	int overdue = 0;

	for (int i = 0; i < c->nrels; i++)
		if (c->rels[i].deadline_ms && c->rels[i].deadline_ms < now)
			overdue++;
	for (size_t k = 0; k < sizeof(_job_families) / sizeof(_job_families[0]); k++) {
		if (_job_families[k].group)
			_job_families[k].group(c, f);
		else
			_job_gauge(c, f, &_job_families[k]);
	}
	_gauge(f, "slurm_elastic_jobs",
	       "Elastic jobs elasticd knows (running and pending)", c->njobs);
	_gauge(f, "slurm_elastic_gpus", "GPUs of the nodes elasticd sees", c->gpus_total);
	_gauge(f, "slurm_elastic_gpus_free", "GPUs no job holds", c->gpus_free);
	_family(f, "slurm_elastic_grants", "gauge", "Grant jobs, by state");
	fprintf(f, "slurm_elastic_grants{state=\"running\"} %d\n", c->grants_running);
	fprintf(f, "slurm_elastic_grants{state=\"pending\"} %d\n", c->grants_pending);
	_gauge(f, "slurm_elastic_releases", "Releases ordered and not done yet",
	       c->nrels);
	_gauge(f, "slurm_elastic_releases_overdue",
	       "Releases past their deadline (the job did not give the GPUs back in time)",
	       overdue);
	_gauge(f, "slurm_elastic_channel_connections", "Job channel connections open",
	       ed_channel_connections(c->ch));
	_gauge(f, "slurm_elastic_slurmctld_up",
	       "1 when the last tick read slurmctld's state", c->snapshot_ok);
	_family(f, "slurm_elastic_tick_seconds", "histogram",
		"How long elasticd's ticks took (observe slurmctld, act, decide, act)");
	uint64_t cum = 0;
	for (int b = 0; b < ED_TICK_BUCKETS; b++) {
		cum += c->tick_bucket[b];
		fputs("slurm_elastic_tick_seconds_bucket{", f);
		_bucket_end(f, b, ED_TICK_BUCKETS, ed_tick_le, cum);
	}
	fprintf(f, "slurm_elastic_tick_seconds_sum %.6f\n", c->tick_sum_s);
	fprintf(f, "slurm_elastic_tick_seconds_count %" PRIu64 "\n", c->ticks);
	_family(f, "slurm_elastic_tick_less_cpu_wait_seconds", "histogram",
		"How long elasticd's ticks took, less the time they waited for a CPU (the host's load)");
	cum = 0;
	for (int b = 0; b < ED_TICK_BUCKETS; b++) {
		cum += c->tick_own_bucket[b];
		fputs("slurm_elastic_tick_less_cpu_wait_seconds_bucket{", f);
		_bucket_end(f, b, ED_TICK_BUCKETS, ed_tick_le, cum);
	}
	fprintf(f, "slurm_elastic_tick_less_cpu_wait_seconds_sum %.6f\n",
		c->tick_own_sum_s);
	fprintf(f, "slurm_elastic_tick_less_cpu_wait_seconds_count %" PRIu64 "\n",
		c->ticks);
	_family(f, "slurm_elastic_tick_cpu_wait_seconds", "counter",
		"Time elasticd's ticks waited for a CPU while they could run (the host's CPUs busy with other work)");
	fprintf(f, "slurm_elastic_tick_cpu_wait_seconds_total %.6f\n", c->tick_runq_s);
	_family(f, "slurm_elastic_tick_phase_seconds", "counter",
		"Time the ticks spent reading slurmctld (observe), deciding, and acting on Slurm");
	for (int p = 0; p < ED_PHASES; p++)
		fprintf(f, "slurm_elastic_tick_phase_seconds_total{phase=\"%s\"} %.6f\n",
			ed_tick_phase[p], c->tick_phase_s[p]);
	struct ed_calls calls;
	ed_slurm_calls(&calls);
	_family(f, "slurm_elastic_slurm_calls", "counter",
		"Calls elasticd made to slurmctld, by kind");
	for (int k = 0; k < ED_CALLS; k++)
		fprintf(f, "slurm_elastic_slurm_calls_total{call=\"%s\"} %" PRIu64 "\n",
			ed_call_name[k], calls.n[k]);
	_family(f, "slurm_elastic_slurm_call_seconds", "counter",
		"Time elasticd waited for slurmctld's answers, by kind of call");
	for (int k = 0; k < ED_CALLS; k++)
		fprintf(f, "slurm_elastic_slurm_call_seconds_total{call=\"%s\"} %.6f\n",
			ed_call_name[k], calls.s[k]);
	_gauge(f, "slurm_elastic_controller_active",
	       "1 when this elasticd holds the controller role, 0 while it stands by",
	       c->active);
	fputs("# EOF\n", f);
}
