// Suites still written as one function each, run as one test.
#include "check.h"

void RunCoordinatorTests();
void RunNegotiatorTests();
void RunTensorStatesTests();
void RunProcessSetsTests();

TEST(Coordinator, All) { RunCoordinatorTests(); }
TEST(Negotiator, All) { RunNegotiatorTests(); }
TEST(TensorStates, All) { RunTensorStatesTests(); }
TEST(ProcessSets, All) { RunProcessSetsTests(); }
