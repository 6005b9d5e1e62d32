/*-------------------------------------------------------------------------
 *
 * engine_test.c
 *	  Entry points for the engine's own tests: they drive a pass of one
 *	  policy batch by batch in the calling session (batch.c, pass.c), and
 *	  a shared drain's slices step by step on a job in local memory
 *	  (slices.c), a policy's purge windows at any instant
 *	  (window.c), and a TTL's cutoff and a key's expiry at any instant
 *	  (expiry.c), so that the resume position, the known-dead prefix,
 *	  slice stealing and window edges are tested without depending on
 *	  time.
 *
 * Who reaches them: nobody, unless a superuser declares them.  The
 * extension's scripts declare none; the engine's regression test
 * (sql/ttl_engine.sql, run by the test command) creates them with CREATE
 * FUNCTION ... LANGUAGE C, which only a superuser may, and each refuses
 * anyone but a superuser in case a superuser grants it.  A batch runs as
 * the table owner, as every batch does (batch.c).
 *
 * State: one pass per session, in a context of its own under
 * TopMemoryContext; ttl_test_engine_begin starts it (ending the last,
 * whose resolution and known-dead prefix the new pass takes over, as the
 * worker's passes do), ttl_test_engine_end ends it.  No locks of its own.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/tuplestore.h"

#include "ttl_index.h"
#include "api/api.h"
#include "engine/engine.h"
#include "engine/batch.h"
#include "policy/policy.h"
#include "shared/shared.h"
#include "shared/shmem.h"

PG_FUNCTION_INFO_V1(ttl_test_engine_begin);
PG_FUNCTION_INFO_V1(ttl_test_engine_range);
PG_FUNCTION_INFO_V1(ttl_test_engine_batch);
PG_FUNCTION_INFO_V1(ttl_test_engine_end);
PG_FUNCTION_INFO_V1(ttl_test_slices);
PG_FUNCTION_INFO_V1(ttl_test_window);
PG_FUNCTION_INFO_V1(ttl_test_cutoff);
PG_FUNCTION_INFO_V1(ttl_test_expiry);

static MemoryContext TestCxt = NULL;
static TtlPolicy *TestPolicy = NULL;
static TtlPass *TestPass = NULL;
static int32 TestRows = 0;
static int32 TestEntries = 0;

/*
 * ttl_test_check
 *		Only a superuser drives the engine by hand.
 */
static void
ttl_test_check(void)
{
	if (!superuser())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("only a superuser may drive the ttl_index engine by hand")));
	/* user code a batch runs must not change the pass under it */
	if (ttl_batch_active())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the engine cannot be driven from inside a purge")));
}

/*
 * ttl_test_engine_begin(policy_id int, rows int, entries int) returns void
 *		Start a pass of the policy in this session: each batch takes at most
 *		rows rows and reads at most entries index entries (0: no bound),
 *		whatever its time.  A pass already started ends, and the new one
 *		takes over its targets' resolution and prefixes.
 */
Datum
ttl_test_engine_begin(PG_FUNCTION_ARGS)
{
	int32		policy_id = PG_GETARG_INT32(0);
	MemoryContext old;
	List	   *policies;
	ListCell   *lc;
	TtlPolicy  *found = NULL;
	TtlPass    *previous = TestPass;

	ttl_test_check();
	if (TestCxt == NULL)
		TestCxt = AllocSetContextCreate(TopMemoryContext, "ttl_index engine test",
										ALLOCSET_DEFAULT_SIZES);
	ttl_targets_init();
	old = MemoryContextSwitchTo(TestCxt);
	policies = ttl_load_policies(TestCxt);
	foreach(lc, policies)
	{
		TtlPolicy  *p = (TtlPolicy *) lfirst(lc);

		if (p->id == policy_id)
			found = p;
	}
	MemoryContextSwitchTo(old);
	if (found == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("no TTL policy %d", policy_id)));
	if (previous != NULL && TestPolicy->id != policy_id)
	{
		ttl_pass_end(previous);
		previous = NULL;
	}
	else if (previous != NULL)
	{
		/* a range set by hand ends with its pass (drain.c's end a job so) */
		foreach(lc, previous->targets)
		{
			TtlTarget  *t = (TtlTarget *) lfirst(lc);

			t->parallel = false;
			t->have_stop = false;
		}
	}
	TestPolicy = found;
	TestRows = PG_GETARG_INT32(1);
	TestEntries = PG_GETARG_INT32(2);
	TestPass = ttl_pass_begin(TestPolicy, previous, ttl_held_create(TestCxt),
							  GetCurrentTimestamp(), TestRows, TestCxt);
	PG_RETURN_VOID();
}

/*
 * ttl_test_target
 *		The target in hand of the session's pass.
 */
static TtlTarget *
ttl_test_target(void)
{
	if (TestPass == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("no engine test pass in this session")));
	if (TestPass->current >= list_length(TestPass->targets))
		return NULL;
	return (TtlTarget *) list_nth(TestPass->targets, TestPass->current);
}

/*
 * ttl_test_key_in
 *		A key of the target's type from its text form.
 */
static Datum
ttl_test_key_in(TtlTarget *t, text *txt)
{
	Oid			input;
	Oid			ioparam;

	getTypeInputInfo(t->keytype, &input, &ioparam);
	return OidInputFunctionCall(input, text_to_cstring(txt), ioparam, -1);
}

/*
 * ttl_test_engine_range(from text, stop text) returns void
 *		The target in hand becomes a slice: its next batch starts at from
 *		(every entry of that key), and its batches stop below stop, as a
 *		shared drain's do (drain.c).  Both NULL: a whole target again.
 *		Needs a batch first (the target is resolved then), and a key by
 *		value.
 */
Datum
ttl_test_engine_range(PG_FUNCTION_ARGS)
{
	TtlTarget  *t;

	ttl_test_check();
	if (PG_ARGISNULL(1) && !PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("a slice needs its stop key")));
	t = ttl_test_target();
	if (t == NULL || t->resolved_gen == 0 || !t->keybyval)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("no resolved target with a key by value in hand; run a batch first")));
	if (PG_ARGISNULL(0) && PG_ARGISNULL(1))
	{
		t->parallel = false;
		t->have_stop = false;
		PG_RETURN_VOID();
	}
	if (!PG_ARGISNULL(0))
		ttl_batch_resume_from(TestPass, t, ttl_test_key_in(t, PG_GETARG_TEXT_PP(0)));
	else
		t->have_resume = false;
	t->parallel = true;
	t->have_stop = true;
	t->stop_key = ttl_test_key_in(t, PG_GETARG_TEXT_PP(1));
	PG_RETURN_VOID();
}

/*
 * ttl_test_key_out
 *		A key of the target's type as text.
 */
static Datum
ttl_test_key_out(TtlTarget *t, Datum key)
{
	Oid			output;
	bool		varlena;

	getTypeOutputInfo(t->keytype, &output, &varlena);
	return CStringGetTextDatum(OidOutputFunctionCall(output, key));
}

static const char *const ttl_test_outcomes[] = {
	[TTL_BATCH_MORE] = "more",
	[TTL_BATCH_DONE] = "done",
	[TTL_BATCH_LOCKED] = "locked",
	[TTL_BATCH_GONE] = "gone",
	[TTL_BATCH_NO_INDEX] = "no index"
};

/*
 * ttl_test_engine_batch() returns record
 *		One batch of the session's pass, in the caller's transaction, and
 *		where it left the target in hand (the last one, when the pass is
 *		over): (outcome, deleted, left, skipped,
 *		target, resume key, resume TID, entries of that key read, prefix
 *		key, prefix pages).  The prefix columns are NULL when the target
 *		has no known-dead prefix recorded.
 */
Datum
ttl_test_engine_batch(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[10];
	bool		nulls[10];
	TtlBatchResult result;
	TtlTarget  *t;
	int			saved_time = ttl_batch_time;

	ttl_test_check();
	(void) ttl_test_target();
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");

	/* bounded by rows and entries only; each batch as asked */
	TestPass->row_limit = TestRows;
	ttl_batch_set_constraints_immediate(!IsTransactionBlock());
	ttl_batch_set_entry_limit(TestEntries);
	ttl_batch_time = INT_MAX;
	PG_TRY();
	{
		ttl_pass_batch(TestPolicy, TestPass, &result);
	}
	PG_FINALLY();
	{
		ttl_batch_time = saved_time;
		ttl_batch_set_entry_limit(0);
		ttl_batch_set_constraints_immediate(true);
	}
	PG_END_TRY();

	memset(nulls, true, sizeof(nulls));
	values[0] = CStringGetTextDatum(ttl_test_outcomes[result.outcome]);
	values[1] = Int64GetDatum(result.deleted);
	values[2] = Int64GetDatum(result.left);
	values[3] = Int64GetDatum(result.skipped_locked);
	nulls[0] = nulls[1] = nulls[2] = nulls[3] = false;
	/* the target in hand, or the last one when the pass is over */
	t = ttl_test_target();
	if (t == NULL && TestPass->targets != NIL)
		t = (TtlTarget *) llast(TestPass->targets);
	if (t != NULL)
	{
		Datum		key;
		uint32		writes;

		values[4] = ObjectIdGetDatum(t->relid);
		nulls[4] = false;
		if (t->have_resume)
		{
			values[5] = ttl_test_key_out(t, t->resume_key);
			nulls[5] = false;
			if (ItemPointerIsValid(&t->resume_tid))
			{
				ItemPointer tid = palloc(sizeof(ItemPointerData));

				ItemPointerCopy(&t->resume_tid, tid);
				values[6] = PointerGetDatum(tid);
				nulls[6] = false;
			}
			values[7] = Int64GetDatum(t->resume_dups);
			nulls[7] = false;
		}
		if (ttl_skip_key(t, &key, &writes))
		{
			values[8] = ttl_test_key_out(t, key);
			values[9] = Int32GetDatum(t->skip.npages);
			nulls[8] = nulls[9] = false;
		}
	}
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

/*
 * ttl_test_engine_end() returns void
 *		End the session's pass.
 */
Datum
ttl_test_engine_end(PG_FUNCTION_ARGS)
{
	ttl_test_check();
	ttl_pass_end(TestPass);
	TestPass = NULL;
	TestPolicy = NULL;
	PG_RETURN_VOID();
}

/*
 * ttl_test_slices_text
 *		The job's slices in use, as "N:STATE[:OWNER] FROM-HI", STATE being
 *		F (free), T (taken) or D (done), FROM "start" for a slice from its
 *		index's start; tables other than the first are marked "tN".
 */
static text *
ttl_test_slices_text(TtlJob *job)
{
	StringInfoData buf;

	initStringInfo(&buf);
	for (int i = 0; i < TTL_MAX_SLICES; i++)
	{
		TtlSlice   *sl = &job->slices[i];

		if (sl->state == TTL_SLICE_UNUSED)
			continue;
		if (buf.len > 0)
			appendStringInfoChar(&buf, ' ');
		appendStringInfo(&buf, "%d:%c", i,
						 sl->state == TTL_SLICE_FREE ? 'F' :
						 sl->state == TTL_SLICE_TAKEN ? 'T' : 'D');
		if (sl->state == TTL_SLICE_TAKEN)
			appendStringInfo(&buf, ":%d", (int) sl->taken_by);
		if (sl->target != 0)
			appendStringInfo(&buf, ":t%d", sl->target);
		if (sl->from_start)
			appendStringInfo(&buf, " start-" INT64_FORMAT, sl->hi);
		else
			appendStringInfo(&buf, " " INT64_FORMAT "-" INT64_FORMAT, sl->cur, sl->hi);
	}
	return cstring_to_text(buf.data);
}

/*
 * ttl_test_slices_step
 *		One step of a script on the job: returns its result.
 *		  claim P             process P claims a slice: its number, -1 busy,
 *		                      -2 over
 *		  progress P I CUR    P's batch in slice I got to CUR: 1, else 0
 *		  end P I             where P's slice I ends now, else -1
 *		  done P I            P's slice I is drained: 1, else 0
 *		  back P I            P gives slice I back part done: 1, else 0
 *		  giveup P I          P found slice I's table locked: 1, else 0
 *		  finished MASK       a table finished and not in MASK, else -1
 */
static int64
ttl_test_slices_step(TtlJob *job, const char *step)
{
	char		op[16];
	long long	a = 0;
	long long	b = 0;
	long long	c = 0;
	int			n = sscanf(step, "%15s %lld %lld %lld", op, &a, &b, &c);
	TtlClaim	claim;
	int64		hi;
	int			outcome;

	if (n >= 2 && strcmp(op, "finished") != 0 && a <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid slice step \"%s\"", step),
				 errdetail("A process id is a positive number.")));

	if (n >= 1 && strcmp(op, "claim") == 0 && n == 2)
		return ttl_slices_claim(job, (pid_t) a, &claim);
	if (n >= 1 && strcmp(op, "progress") == 0 && n == 4)
		return ttl_slices_progress(job, (int) b, (pid_t) a, true, (int64) c) ? 1 : 0;
	if (n >= 1 && strcmp(op, "end") == 0 && n == 3)
		return ttl_slices_end(job, (int) b, (pid_t) a, &hi) ? hi : -1;
	if (n >= 1 && strcmp(op, "done") == 0 && n == 3)
		return ttl_slices_let_go(job, (int) b, (pid_t) a, TTL_SLICE_DONE,
								 TTL_BATCH_MORE) ? 1 : 0;
	if (n >= 1 && strcmp(op, "back") == 0 && n == 3)
		return ttl_slices_let_go(job, (int) b, (pid_t) a, TTL_SLICE_FREE,
								 TTL_BATCH_MORE) ? 1 : 0;
	if (n >= 1 && strcmp(op, "giveup") == 0 && n == 3)
		return ttl_slices_let_go(job, (int) b, (pid_t) a, TTL_SLICE_DONE,
								 TTL_BATCH_LOCKED) ? 1 : 0;
	if (n >= 1 && strcmp(op, "finished") == 0 && n == 2)
		return ttl_slices_finished(job, (uint32) a, &outcome);
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid slice step \"%s\"", step)));
	return 0;					/* keep the compiler quiet */
}

/*
 * ttl_test_slices(lo bigint, hi bigint, nslices int, ntables int,
 *				   steps text[] [, top bigint]) returns setof (step text,
 *				   result bigint, slices text)
 *		Cut a job of ntables tables over [lo, hi), the first table's keys
 *		ending below top (hi when not given), into nslices slices, as the
 *		lead posts one (parallel.c), then run the steps (see
 *		ttl_test_slices_step) on it: a row for the cut and for each step,
 *		with the slices as they stand after it.
 */
Datum
ttl_test_slices(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int64		lo = PG_GETARG_INT64(0);
	int64		hi = PG_GETARG_INT64(1);
	int32		nslices = PG_GETARG_INT32(2);
	int32		ntables = PG_GETARG_INT32(3);
	ArrayType  *steps = PG_GETARG_ARRAYTYPE_P(4);
	int64		top = PG_NARGS() > 5 ? PG_GETARG_INT64(5) : hi;
	TtlJobTarget tables[TTL_MAX_JOB_TARGETS];
	TtlJob	   *job;
	Datum	   *elems;
	bool	   *enulls;
	int			nelems;
	Datum		values[3];
	bool		nulls[3] = {false, false, false};

	ttl_test_check();
	if (nslices < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a job has at least one slice")));
	if (ntables < 1 || ntables > TTL_MAX_JOB_TARGETS)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a job has 1 to %d tables", TTL_MAX_JOB_TARGETS)));
	InitMaterializedSRF(fcinfo, 0);
	job = palloc0(sizeof(TtlJob));
	memset(tables, 0, sizeof(tables));
	job->active = true;
	values[0] = CStringGetTextDatum("cut");
	values[1] = Int64GetDatum(ttl_slices_cut(job, tables, ntables, lo, top, hi, nslices));
	values[2] = PointerGetDatum(ttl_test_slices_text(job));
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);

	deconstruct_array(steps, TEXTOID, -1, false, TYPALIGN_INT, &elems, &enulls, &nelems);
	for (int i = 0; i < nelems; i++)
	{
		char	   *step;

		if (enulls[i])
			continue;
		step = TextDatumGetCString(elems[i]);
		values[0] = CStringGetTextDatum(step);
		values[1] = Int64GetDatum(ttl_test_slices_step(job, step));
		values[2] = PointerGetDatum(ttl_test_slices_text(job));
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/*
 * ttl_test_window(purge_window text, zone text, at timestamptz,
 *				   OUT open bool, OUT from_ts timestamptz, OUT until_ts timestamptz)
 *		Whether a policy with these windows, read in this zone, may purge at
 *		`at`, and the edges of its window then or of its next one
 *		(window.c), for any instant: the days a zone skips or repeats an
 *		hour are tested without waiting for them.
 */
Datum
ttl_test_window(PG_FUNCTION_ARGS)
{
	TtlPolicy	policy;
	TimestampTz from;
	TimestampTz until;
	TupleDesc	desc;
	Datum		values[3];
	bool		nulls[3] = {false, false, false};

	ttl_test_check();
	memset(&policy, 0, sizeof(policy));
	policy.purge_window = ttl_window_normalize(text_to_cstring(PG_GETARG_TEXT_PP(0)));
	ttl_window_read(policy.purge_window, &policy.windows);
	policy.time_zone = text_to_cstring(PG_GETARG_TEXT_PP(1));
	if (!ttl_zone_valid(policy.time_zone))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("time zone \"%s\" not recognized", policy.time_zone)));
	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	values[0] = BoolGetDatum(ttl_window_find(&policy, PG_GETARG_TIMESTAMPTZ(2), &from, &until));
	values[1] = TimestampTzGetDatum(from);
	values[2] = TimestampTzGetDatum(until);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(desc), values, nulls)));
}

/*
 * ttl_test_policy
 *		A policy of this TTL, zone and unit (NULL: none) on a key of this
 *		type, for the time arithmetic alone (expiry.c).
 */
static void
ttl_test_policy(TtlPolicy *policy, FunctionCallInfo fcinfo, Oid *typid)
{
	Interval   *span = PG_GETARG_INTERVAL_P(0);

	ttl_test_check();
	memset(policy, 0, sizeof(TtlPolicy));
	policy->expire_after = ttl_interval_usecs(span);
	policy->expire_months = span->month;
	policy->time_zone = text_to_cstring(PG_GETARG_TEXT_PP(1));
	if (!ttl_zone_valid(policy->time_zone))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("time zone \"%s\" not recognized", policy->time_zone)));
	*typid = PG_GETARG_OID(3);
	policy->unit_ns = PG_ARGISNULL(4) ? 0 :
		ttl_unit_parse(text_to_cstring(PG_GETARG_TEXT_PP(4)));
	if (!ttl_key_type_ok(*typid, policy->unit_ns))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("type %s cannot be a TTL key with this unit",
						format_type_be(*typid))));
}

/*
 * ttl_test_cutoff(expire_after interval, zone text, at timestamptz,
 *				   key_type regtype, unit text, OUT limit_at timestamptz,
 *				   OUT bound text, OUT recheck bool)
 *		The cutoff of a pass begun at `at` of a policy with this TTL, whose
 *		keys are of this type and unit (NULL: none), read in this zone
 *		(expiry.c): calendar months are tested at any instant.
 */
Datum
ttl_test_cutoff(PG_FUNCTION_ARGS)
{
	TtlPolicy	policy;
	TtlCutoff	cutoff;
	Oid			typid;
	Oid			out;
	bool		varlena;
	TupleDesc	desc;
	Datum		values[3];
	bool		nulls[3] = {false, false, false};

	ttl_test_policy(&policy, fcinfo, &typid);
	ttl_cutoff_compute(&policy, typid, ttl_policy_zone(&policy),
					   PG_GETARG_TIMESTAMPTZ(2), &cutoff);
	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	getTypeOutputInfo(typid, &out, &varlena);
	values[0] = TimestampTzGetDatum(cutoff.limit);
	values[1] = CStringGetTextDatum(OidOutputFunctionCall(out, cutoff.bound));
	values[2] = BoolGetDatum(cutoff.recheck);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(desc), values, nulls)));
}

/*
 * ttl_test_expiry(expire_after interval, zone text, key text,
 *				   key_type regtype, unit text) returns timestamptz
 *		The instant after which a row with this key (in the type's input
 *		form) of such a policy has expired (expiry.c's ttl_key_expiry).
 */
Datum
ttl_test_expiry(PG_FUNCTION_ARGS)
{
	TtlPolicy	policy;
	Oid			typid;
	Oid			in;
	Oid			ioparam;
	Datum		key;

	ttl_test_policy(&policy, fcinfo, &typid);
	getTypeInputInfo(typid, &in, &ioparam);
	key = OidInputFunctionCall(in, text_to_cstring(PG_GETARG_TEXT_PP(2)), ioparam, -1);
	PG_RETURN_TIMESTAMPTZ(ttl_key_expiry(&policy, typid, ttl_policy_zone(&policy), key));
}
