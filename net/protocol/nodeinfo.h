#pragma once

// NodeInfo is a message body: it lives with the others in net/protocol/messages/.
#include "net/protocol/messages/nodeinfo.h"
