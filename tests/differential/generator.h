// The seeded request generator: the same seed and fixture give the same list.
//
// Requests are drawn from templates that leave the tree as they found it, so
// a path resolves to the same file whenever it is asked about: a create is
// followed by the unlink of the same name, a mkdir by its rmdir, a rename by
// the rename back, a link by the unlink of the new name. When the first half
// is denied, so is the second (the engine decides both on the same name).
#pragma once

#include <cstdint>
#include <vector>

#include "tests/differential/fixture.h"
#include "tests/differential/request.h"

namespace sv::differential {

// At least `count` requests (a template is never cut in half).
std::vector<Request> generateRequests(uint32_t seed, size_t count, const Fixture& fixture);

}  // namespace sv::differential
