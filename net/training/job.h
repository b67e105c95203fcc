#pragma once

#include "core/batchshares.h"
#include "core/modelspec.h"
#include "net/protocol/messages/jobspec.h"

#include <QCborMap>
#include <QString>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

namespace edgetrain::net {

// The batch split the trainer applies is the planner's model's own (core/batchshares.h): one
// rule, so a prediction and a run split alike.
using core::sharesFromSpeeds;
using core::splitByShares;

} // namespace edgetrain::net
