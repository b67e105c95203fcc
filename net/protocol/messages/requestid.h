#pragma once

#include <QCborMap>

namespace edgetrain::net {

/**
 * A worker's requests carry an id and the coordinator's "reply" names it, so any number can be
 * outstanding (JobLink). The id travels inside the body, beside the request's own fields.
 */
namespace RequestId {
/** Stamps a request's body with its id. */
void set(QCborMap &body, qint64 id);
/** A request's id; -1 if it has none (then nobody waits for an answer). */
qint64 of(const QCborMap &body);
/** Makes `reply` the answer to request `id`. */
void setReplyTo(QCborMap &reply, qint64 id);
/** The request a reply answers; -1 if it names none. */
qint64 replyTo(const QCborMap &reply);
} // namespace RequestId

} // namespace edgetrain::net
