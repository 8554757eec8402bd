// Suites still written as one function each, run as one test.
#include "check.h"

void RunCoordinatorTests();
void RunNegotiatorTests();

TEST(Coordinator, All) { RunCoordinatorTests(); }
TEST(Negotiator, All) { RunNegotiatorTests(); }
