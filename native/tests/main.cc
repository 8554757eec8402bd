// Unit tests of native/core, without MPI. Exit status 0 only if every check passed.
#include <cstdio>

#include "check.h"

void RunRingTests();
void RunDoublingTests();
void RunFusionTests();
void RunCoordinatorTests();
void RunMessageTests();
void RunValidationTests();
void RunExecutorTests();
void RunSettingsTests();
void RunHierarchicalTests();
void RunResponseCacheTests();
void RunNegotiatorTests();
void RunTensorStatesTests();
void RunProcessSetsTests();
void RunLivenessTests();
void RunFlightRecorderTests();
void RunAutotunerTests();
void RunAndAllreduceTests();
void RunTimelineTests();
void RunBufferPoolTests();
void RunWorkBufferTests();
void RunPiecesTests();

int main() {
  RunMessageTests();
  RunFusionTests();
  RunCoordinatorTests();
  RunResponseCacheTests();
  RunNegotiatorTests();
  RunTensorStatesTests();
  RunProcessSetsTests();
  RunLivenessTests();
  RunFlightRecorderTests();
  RunAutotunerTests();
  RunAndAllreduceTests();
  RunSettingsTests();
  RunValidationTests();
  RunPiecesTests();
  RunRingTests();
  RunDoublingTests();
  RunExecutorTests();
  RunHierarchicalTests();
  RunTimelineTests();
  RunBufferPoolTests();
  RunWorkBufferTests();
  std::printf("%d checks, %d failed\n", mpirep_test::checks.load(), mpirep_test::failures.load());
  return mpirep_test::failures == 0 ? 0 : 1;
}
