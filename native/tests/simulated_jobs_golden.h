// The transcripts of the simulated jobs (simulated_job.h), recorded as golden.h says.
#pragma once

inline const char* const kSimulatedJobsGolden = R"golden(
=== Autotuner.RetuneReachesEveryRankInTheSameRound#0
round 1 decided: kind 0 allreduce set 0 names a b c dtype float32 op Sum root 0 scale 1/1 shapes [16] [16] [16] first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 192
round 1 rank 0 part 1
round 1 rank 1 part 1
round 1 rank 2 part 1
round 2 rank 0 cached: kind 0 allreduce set 0 names a b c dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 192
round 2 rank 1 cached: kind 0 allreduce set 0 names a b c dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 192
round 2 rank 2 cached: kind 0 allreduce set 0 names a b c dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 192
round 3 rank 0 cached: kind 0 allreduce set 0 names a b c dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 192
round 3 rank 1 cached: kind 0 allreduce set 0 names a b c dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 192
round 3 rank 2 cached: kind 0 allreduce set 0 names a b c dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 192
round 4 retune: fusion_threshold=64
round 6 rank 0 cached: kind 0 allreduce set 0 names a dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 64
round 6 rank 0 cached: kind 0 allreduce set 0 names b dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 64
round 6 rank 0 cached: kind 0 allreduce set 0 names c dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 64
round 6 rank 1 cached: kind 0 allreduce set 0 names a dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 64
round 6 rank 1 cached: kind 0 allreduce set 0 names b dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 64
round 6 rank 1 cached: kind 0 allreduce set 0 names c dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 64
round 6 rank 2 cached: kind 0 allreduce set 0 names a dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 64
round 6 rank 2 cached: kind 0 allreduce set 0 names b dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 64
round 6 rank 2 cached: kind 0 allreduce set 0 names c dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 64
=== Negotiator.RepeatsRunFromTheCache#0
round 1 decided: kind 0 allreduce set 0 names c a b dtype float32 op Sum root 0 scale 1/1 shapes [4] [4] [4] first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 48
round 1 rank 0 part 1
round 1 rank 1 part 1
round 1 rank 2 part 1
round 2 rank 0 cached: kind 0 allreduce set 0 names c a b dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 48
round 2 rank 1 cached: kind 0 allreduce set 0 names c a b dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 48
round 2 rank 2 cached: kind 0 allreduce set 0 names c a b dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 48
=== Negotiator.HeldHitsRunOnceEveryRankHasThem#0
round 1 decided: kind 0 allreduce set 0 names c a b dtype float32 op Sum root 0 scale 1/1 shapes [4] [4] [4] first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 48
round 1 rank 0 part 1
round 1 rank 1 part 1
round 1 rank 2 part 1
round 2 rank 0 cached: kind 0 allreduce set 0 names c a b dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 48
round 2 rank 1 cached: kind 0 allreduce set 0 names c a b dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 48
round 2 rank 2 cached: kind 0 allreduce set 0 names c a b dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 48
round 8 rank 0 cached: kind 0 allreduce set 0 names c a b dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 48
round 8 rank 1 cached: kind 0 allreduce set 0 names c a b dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 48
round 8 rank 2 cached: kind 0 allreduce set 0 names c a b dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 48
=== Negotiator.ChangedRequestIsAMismatchOnEveryRank#0
round 1 decided: kind 0 allreduce set 0 names a b dtype float32 op Sum root 0 scale 1/1 shapes [4] [4] first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 32
round 1 rank 0 part 1
round 1 rank 1 part 1
round 1 rank 2 part 1
round 2 rank 0 cached: kind 0 allreduce set 0 names a b dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 32
round 2 rank 1 cached: kind 0 allreduce set 0 names a b dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 32
round 2 rank 2 cached: kind 0 allreduce set 0 names a b dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 32
round 4 decided: kind 1 allreduce set 0 names a dtype float32 op Sum root 0 scale 1/1 shapes [4] first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 0 bytes 16 error mismatch ranks []: mismatched shapes for tensor 'a': [4] on ranks 0, 2; [5] on rank 1
round 4 rank 0 part 2
round 4 rank 1 part 2
round 4 rank 2 part 2
round 5 rank 0 cached: kind 0 allreduce set 0 names b dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 16
round 5 rank 1 cached: kind 0 allreduce set 0 names b dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 16
round 5 rank 2 cached: kind 0 allreduce set 0 names b dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 16
round 5 decided: kind 0 allreduce set 0 names a dtype float32 op Sum root 0 scale 1/1 shapes [4] first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 16
round 5 rank 0 part 1
round 5 rank 1 part 1
round 5 rank 2 part 1
round 6 rank 0 cached: kind 0 allreduce set 0 names a dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 16
round 6 rank 1 cached: kind 0 allreduce set 0 names a dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 16
round 6 rank 2 cached: kind 0 allreduce set 0 names a dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 16
round 8 decided: kind 1 allreduce set 0 names a dtype float32 op Sum root 0 scale 1/1 shapes [4] first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 0 bytes 16 error mismatch ranks []: mismatched reduction ops for tensor 'a': Sum on ranks 0, 1; Max on rank 2
round 8 rank 0 part 2
round 8 rank 1 part 2
round 8 rank 2 part 2
round 9 decided: kind 0 allreduce set 0 names a dtype float32 op Sum root 0 scale 1/1 shapes [4] first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 16
round 9 rank 0 part 1
round 9 rank 1 part 1
round 9 rank 2 part 1
round 11 decided: kind 1 allgather set 0 names a dtype float32 op Sum root 0 scale 1/1 shapes [4] first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 0 bytes 16 error mismatch ranks []: mismatched collective operations for tensor 'a': allgather on rank 0; allreduce on ranks 1, 2
round 11 rank 0 part 2
round 11 rank 1 part 2
round 11 rank 2 part 2
=== Negotiator.StalledCachedTensorIsReportedAndCancelled#0
round 1 decided: kind 0 allreduce set 0 names a dtype float32 op Sum root 0 scale 1/1 shapes [4] first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 16
round 1 rank 0 part 1
round 1 rank 1 part 1
round 1 rank 2 part 1
round 11 report: WARNING: stalled collective: tensor 'a' (allreduce) waiting 2 s: submitted by ranks 0, 2; missing rank 1
round 19 report: WARNING: stalled collective: tensor 'a' (allreduce) waiting 4 s: submitted by ranks 0, 2; missing rank 1
round 19 report: ERROR: collectives waited longer than the stall shutdown time (4 s) and were cancelled on every rank:
  tensor 'a' (allreduce) waiting 4 s: submitted by ranks 0, 2; missing rank 1
round 19 decided: kind 1 allreduce set 0 names a dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 0 bytes 0 error stalled ranks [0,2]: collectives waited longer than the stall shutdown time (4 s) and were cancelled on every rank:
  tensor 'a' (allreduce) waiting 4 s: submitted by ranks 0, 2; missing rank 1
round 19 rank 0 part 2
round 19 rank 1 part 0
round 19 rank 2 part 2
round 23 decided: kind 1 allreduce set 0 names a dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 0 bytes 0 error stalled ranks [1]: collectives waited longer than the stall shutdown time (4 s) and were cancelled on every rank:
  tensor 'a' (allreduce) waiting 4 s: submitted by ranks 0, 2; missing rank 1
round 23 rank 0 part 0
round 23 rank 1 part 2
round 23 rank 2 part 0
round 24 decided: kind 0 allreduce set 0 names a dtype float32 op Sum root 0 scale 1/1 shapes [4] first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 16
round 24 rank 0 part 1
round 24 rank 1 part 1
round 24 rank 2 part 1
round 25 rank 0 cached: kind 0 allreduce set 0 names a dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 16
round 25 rank 1 cached: kind 0 allreduce set 0 names a dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 16
round 25 rank 2 cached: kind 0 allreduce set 0 names a dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 16
=== Negotiator.ProcessSetsRunFromTheCacheWithoutOtherRanks#0
round 1 decided: kind 0 add_process_set set 0 names add dtype float32 op Sum root 0 scale 1/1 shapes [] first_dims [] splits [] joined -1 new_set 1[0,2] removed 0 cacheable 0 bytes 4
round 1 rank 0 part 1
round 1 rank 1 part 1
round 1 rank 2 part 1
round 2 decided: kind 0 allreduce set 1 names s dtype float32 op Sum root 0 scale 1/1 shapes [4] first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 16
round 2 rank 0 part 1
round 2 rank 1 part 0
round 2 rank 2 part 1
round 3 rank 0 cached: kind 0 allreduce set 1 names s dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 16
round 3 rank 2 cached: kind 0 allreduce set 1 names s dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 16
round 4 rank 0 cached: kind 0 allreduce set 1 names s dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 16
round 4 rank 2 cached: kind 0 allreduce set 1 names s dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 16
round 5 decided: kind 0 allreduce set 0 names g dtype float32 op Sum root 0 scale 1/1 shapes [4] first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 16
round 5 rank 0 part 1
round 5 rank 1 part 1
round 5 rank 2 part 1
round 6 decided: kind 0 remove_process_set set 0 names remove dtype float32 op Sum root 0 scale 1/1 shapes [] first_dims [] splits [] joined -1 new_set 0[] removed 1 cacheable 0 bytes 4
round 6 rank 0 part 1
round 6 rank 1 part 1
round 6 rank 2 part 1
round 7 decided: kind 1 allreduce set 0 names s dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 0 bytes 0 error invalid_argument ranks [0]: tensor 's': its process set 1 was removed
round 7 rank 0 part 2
round 7 rank 1 part 0
round 7 rank 2 part 0
=== Negotiator.JoinDuringCachedSteadyState#0
round 1 decided: kind 0 allreduce set 0 names a dtype float32 op Sum root 0 scale 1/1 shapes [4] first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 16
round 1 rank 0 part 1
round 1 rank 1 part 1
round 1 rank 2 part 1
round 2 rank 0 cached: kind 0 allreduce set 0 names a dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 16
round 2 rank 1 cached: kind 0 allreduce set 0 names a dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 16
round 2 rank 2 cached: kind 0 allreduce set 0 names a dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 16
round 4 decided: kind 0 allreduce set 0 names a dtype float32 op Sum root 0 scale 1/1 shapes [4] first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 0 bytes 16
round 4 rank 0 part 1
round 4 rank 1 part 1
round 4 rank 2 part 1
round 23 decided: kind 0 join set 0 names join dtype float32 op Sum root 0 scale 1/1 shapes [] first_dims [] splits [] joined 1 new_set 0[] removed 0 cacheable 0 bytes 4
round 23 rank 0 part 1
round 23 rank 1 part 1
round 23 rank 2 part 1
round 24 decided: kind 0 allreduce set 0 names a dtype float32 op Sum root 0 scale 1/1 shapes [4] first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 16
round 24 rank 0 part 1
round 24 rank 1 part 1
round 24 rank 2 part 1
round 25 rank 0 cached: kind 0 allreduce set 0 names a dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 16
round 25 rank 1 cached: kind 0 allreduce set 0 names a dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 16
round 25 rank 2 cached: kind 0 allreduce set 0 names a dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 16
=== Negotiator.EvictionAtTinyCapacity#0
round 1 decided: kind 0 allreduce set 0 names a b c dtype float32 op Sum root 0 scale 1/1 shapes [4] [4] [4] first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 48
round 1 rank 0 part 1
round 1 rank 1 part 1
round 1 rank 2 part 1
round 1 rank 3 part 1
round 2 rank 0 cached: kind 0 allreduce set 0 names c b dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 32
round 2 rank 1 cached: kind 0 allreduce set 0 names c b dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 32
round 2 rank 2 cached: kind 0 allreduce set 0 names c b dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 32
round 2 rank 3 cached: kind 0 allreduce set 0 names c b dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 32
round 2 decided: kind 0 allreduce set 0 names a dtype float32 op Sum root 0 scale 1/1 shapes [4] first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 16
round 2 rank 0 part 1
round 2 rank 1 part 1
round 2 rank 2 part 1
round 2 rank 3 part 1
round 3 rank 0 cached: kind 0 allreduce set 0 names a b dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 32
round 3 rank 1 cached: kind 0 allreduce set 0 names a b dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 32
round 3 rank 2 cached: kind 0 allreduce set 0 names a b dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 32
round 3 rank 3 cached: kind 0 allreduce set 0 names a b dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 32
round 3 decided: kind 0 allreduce set 0 names c dtype float32 op Sum root 0 scale 1/1 shapes [4] first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 16
round 3 rank 0 part 1
round 3 rank 1 part 1
round 3 rank 2 part 1
round 3 rank 3 part 1
round 4 rank 0 cached: kind 0 allreduce set 0 names c b dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 32
round 4 rank 1 cached: kind 0 allreduce set 0 names c b dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 32
round 4 rank 2 cached: kind 0 allreduce set 0 names c b dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 32
round 4 rank 3 cached: kind 0 allreduce set 0 names c b dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 32
round 4 decided: kind 0 allreduce set 0 names a dtype float32 op Sum root 0 scale 1/1 shapes [4] first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 16
round 4 rank 0 part 1
round 4 rank 1 part 1
round 4 rank 2 part 1
round 4 rank 3 part 1
=== Negotiator.ShutdownWhileHitsWait#0
round 1 decided: kind 0 allreduce set 0 names a dtype float32 op Sum root 0 scale 1/1 shapes [4] first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 16
round 1 rank 0 part 1
round 1 rank 1 part 1
round 1 rank 2 part 1
round 3 decided: kind 1 allreduce set 0 names a dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 0 bytes 0 error shut_down ranks [0]: tensor 'a' cannot run: rank 1 failed: ValueError: bad batch
round 3 decided: kind 1 allreduce set 0 names a dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 0 bytes 0 error shut_down ranks [2]: tensor 'a' cannot run: rank 1 failed: ValueError: bad batch
round 3 rank 0 part 2
round 3 rank 1 part 0
round 3 rank 2 part 0
round 3 rank 0 part 0
round 3 rank 1 part 0
round 3 rank 2 part 2
round 4 decided: kind 2 allreduce set 0 names dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 0 bytes 0
round 4 rank 0 part 3
round 4 rank 1 part 3
round 4 rank 2 part 3
=== Negotiator.CacheOff#0
round 1 decided: kind 0 allreduce set 0 names b a dtype float32 op Sum root 0 scale 1/1 shapes [4] [4] first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 32
round 1 rank 0 part 1
round 1 rank 1 part 1
round 2 decided: kind 0 allreduce set 0 names b a dtype float32 op Sum root 0 scale 1/1 shapes [4] [4] first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 32
round 2 rank 0 part 1
round 2 rank 1 part 1
round 3 decided: kind 0 allreduce set 0 names b a dtype float32 op Sum root 0 scale 1/1 shapes [4] [4] first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 32
round 3 rank 0 part 1
round 3 rank 1 part 1
=== Negotiator.Randomized#0
round 1 decided: kind 1 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes [1] first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 0 bytes 4 error mismatch ranks []: mismatched shapes for tensor 't0': [1] on rank 0; [2] on rank 1
round 1 rank 0 part 2
round 1 rank 1 part 2
round 2 decided: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes [1] first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 2 rank 0 part 1
round 2 rank 1 part 1
round 4 rank 0 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 4 rank 1 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 7 rank 0 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 7 rank 1 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 9 rank 0 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 9 rank 1 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 10 rank 0 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 10 rank 1 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 12 rank 0 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 12 rank 1 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 14 decided: kind 1 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes [1] first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 0 bytes 4 error mismatch ranks []: mismatched shapes for tensor 't0': [1] on rank 0; [2] on rank 1
round 14 rank 0 part 2
round 14 rank 1 part 2
round 15 decided: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes [1] first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 15 rank 0 part 1
round 15 rank 1 part 1
round 16 rank 0 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 16 rank 1 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 18 rank 0 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 18 rank 1 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 21 rank 0 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 21 rank 1 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
=== Negotiator.Randomized#1
digest 7782e484b7d00fe7, 88 lines
=== Negotiator.Randomized#2
digest 206b6b267fdfb78f, 69 lines
=== Negotiator.Randomized#3
digest e8d6bf857b629fe4, 72 lines
=== Negotiator.Randomized#4
digest 3f491c25bc4173fc, 100 lines
=== Negotiator.Randomized#5
digest b2d1970dc34e3738, 142 lines
=== Negotiator.Randomized#6
digest 03ec8997355bb03a, 96 lines
=== Negotiator.Randomized#7
digest be386ce30bd8772c, 145 lines
=== Negotiator.Randomized#8
digest d70928d13240cf57, 42 lines
=== Negotiator.Randomized#9
round 1 decided: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes [1] first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 1 rank 0 part 1
round 1 rank 1 part 1
round 2 rank 0 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 2 rank 1 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 3 rank 0 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 3 rank 1 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 6 rank 0 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 6 rank 1 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 7 rank 0 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 7 rank 1 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 9 rank 0 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 9 rank 1 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 10 rank 0 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 10 rank 1 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 11 rank 0 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 11 rank 1 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 13 decided: kind 1 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes [1] first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 0 bytes 4 error mismatch ranks []: mismatched shapes for tensor 't0': [1] on rank 0; [2] on rank 1
round 13 rank 0 part 2
round 13 rank 1 part 2
round 14 decided: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes [1] first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 14 rank 0 part 1
round 14 rank 1 part 1
round 16 rank 0 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 16 rank 1 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 18 decided: kind 1 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes [1] first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 0 bytes 4 error mismatch ranks []: mismatched shapes for tensor 't0': [1] on rank 0; [2] on rank 1
round 18 rank 0 part 2
round 18 rank 1 part 2
=== Negotiator.Randomized#10
round 1 decided: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes [1] first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 1 rank 0 part 1
round 1 rank 1 part 1
round 2 rank 0 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 2 rank 1 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 5 decided: kind 1 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes [1] first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 0 bytes 4 error mismatch ranks []: mismatched shapes for tensor 't0': [1] on rank 0; [2] on rank 1
round 5 rank 0 part 2
round 5 rank 1 part 2
round 7 decided: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes [1] first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 7 rank 0 part 1
round 7 rank 1 part 1
round 8 rank 0 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 8 rank 1 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 10 rank 0 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 10 rank 1 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 13 rank 0 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 13 rank 1 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 14 rank 0 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 14 rank 1 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 16 rank 0 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 16 rank 1 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 18 decided: kind 1 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes [1] first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 0 bytes 4 error mismatch ranks []: mismatched shapes for tensor 't0': [1] on rank 0; [2] on rank 1
round 18 rank 0 part 2
round 18 rank 1 part 2
round 19 decided: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes [1] first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 19 rank 0 part 1
round 19 rank 1 part 1
round 22 decided: kind 1 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes [1] first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 0 bytes 4 error mismatch ranks []: mismatched shapes for tensor 't0': [1] on rank 0; [2] on rank 1
round 22 rank 0 part 2
round 22 rank 1 part 2
=== Negotiator.Randomized#11
digest c24c68206cc9fb3c, 182 lines
=== Negotiator.Randomized#12
digest 7b60a410606783bc, 162 lines
=== Negotiator.Randomized#13
digest 6ce44f4c6126c92a, 190 lines
=== Negotiator.Randomized#14
round 1 decided: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes [1] first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 1 rank 0 part 1
round 2 rank 0 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 3 rank 0 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 4 rank 0 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 5 rank 0 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 6 decided: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes [2] first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 8
round 6 rank 0 part 1
round 7 decided: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes [1] first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 7 rank 0 part 1
round 8 rank 0 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 10 rank 0 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 11 rank 0 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 13 rank 0 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 15 rank 0 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
=== Negotiator.Randomized#15
digest 643b6a57620b5181, 154 lines
=== Negotiator.Randomized#16
digest 229bb3cd2dba73f8, 228 lines
=== Negotiator.Randomized#17
digest 2ed3aa2d30c62b30, 37 lines
=== Negotiator.Randomized#18
digest d3d4aa854e9540f6, 48 lines
=== Negotiator.Randomized#19
digest d5d6cca9831de140, 154 lines
=== Negotiator.Randomized#20
digest df830c0732dc0b31, 25 lines
=== Negotiator.Randomized#21
digest 5473a520e092c8f8, 102 lines
=== Negotiator.Randomized#22
digest eab42de838da8ccc, 49 lines
=== Negotiator.Randomized#23
digest fc3f6e6c3fe78dcf, 98 lines
=== Negotiator.Randomized#24
round 1 decided: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes [1] first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 1 rank 0 part 1
round 2 rank 0 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 3 rank 0 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 5 rank 0 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 6 rank 0 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 7 rank 0 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 8 rank 0 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 9 rank 0 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 10 rank 0 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 11 rank 0 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 12 rank 0 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 15 rank 0 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
=== Negotiator.Randomized#25
digest 13d558384fd00437, 79 lines
=== Negotiator.Randomized#26
digest 935f5d56f8fc3f4c, 200 lines
=== Negotiator.Randomized#27
digest d4cb859f159e20e6, 88 lines
=== Negotiator.Randomized#28
digest bd71887db2e7d20d, 25 lines
=== Negotiator.Randomized#29
digest c582b0e6e27d1d22, 64 lines
=== Negotiator.Randomized#30
digest 0a7729da4e9948c5, 39 lines
=== Negotiator.Randomized#31
digest f4e4ca3ddb33ab69, 149 lines
=== Negotiator.Randomized#32
digest 4d84a256b9f51a02, 47 lines
=== Negotiator.Randomized#33
digest acb074ac2bdaef63, 64 lines
=== Negotiator.Randomized#34
digest eb56fd82b4eef51b, 123 lines
=== Negotiator.Randomized#35
round 2 decided: kind 1 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes [1] first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 0 bytes 4 error mismatch ranks []: mismatched shapes for tensor 't0': [1] on rank 0; [2] on rank 1
round 2 rank 0 part 2
round 2 rank 1 part 2
round 4 decided: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes [1] first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 4 rank 0 part 1
round 4 rank 1 part 1
round 5 rank 0 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 5 rank 1 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 6 rank 0 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 6 rank 1 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 7 rank 0 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 7 rank 1 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 9 rank 0 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 9 rank 1 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 11 rank 0 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 11 rank 1 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 13 rank 0 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 13 rank 1 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 18 rank 0 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 18 rank 1 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 20 rank 0 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 20 rank 1 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 22 rank 0 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 22 rank 1 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 24 rank 0 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
round 24 rank 1 cached: kind 0 allreduce set 0 names t0 dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 4
=== Negotiator.Randomized#36
digest 9ac79265ae43f3bb, 227 lines
=== Negotiator.Randomized#37
digest c09b0f8cec01e8d0, 61 lines
=== Negotiator.Randomized#38
digest f89419e8d8c26e82, 50 lines
=== Negotiator.Randomized#39
digest 61c7997d179a1672, 158 lines
=== TensorStates.TensorsMoveThroughTheStatesTheRulesSay#0
round 1 decided: kind 0 allreduce set 0 names a dtype float32 op Sum root 0 scale 1/1 shapes [4] first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 16
round 1 rank 0 part 1
round 1 rank 1 part 1
round 1 rank 2 part 1
round 4 decided: kind 1 allreduce set 0 names a dtype float32 op Sum root 0 scale 1/1 shapes [4] first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 0 bytes 16 error mismatch ranks []: mismatched shapes for tensor 'a': [4] on ranks 0, 1; [5] on rank 2
round 4 rank 0 part 2
round 4 rank 1 part 2
round 4 rank 2 part 2
round 5 decided: kind 0 allreduce set 0 names b dtype float32 op Sum root 0 scale 1/1 shapes [4] first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 16
round 5 rank 0 part 1
round 5 rank 1 part 1
round 5 rank 2 part 1
round 6 rank 0 cached: kind 0 allreduce set 0 names b dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 16
round 6 rank 1 cached: kind 0 allreduce set 0 names b dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 16
round 6 rank 2 cached: kind 0 allreduce set 0 names b dtype float32 op Sum root 0 scale 1/1 shapes first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 1 bytes 16
round 9 decided: kind 0 allreduce set 0 names b dtype float32 op Sum root 0 scale 1/1 shapes [4] first_dims [] splits [] joined -1 new_set 0[] removed 0 cacheable 0 bytes 16
round 9 rank 0 part 1
round 9 rank 1 part 1
round 9 rank 2 part 1
)golden";
