#pragma once

#include <QByteArray>
#include <QObject>
#include <QTimer>

#include <functional>
#include <vector>

namespace edgetrain::net {

class ControlClient;
struct Member;

/**
 * Calls lost nodes back: about once a second, a new connection to each lost member's address
 * (one at a time per member, Member::connecting); once a node answers and proves the cluster key,
 * `answered` gets the member and the connected client (a child of the rejoiner's parent, from
 * then on the caller's). A node that does not answer is tried again at the next call. Runs on the
 * thread that owns it.
 */
class Rejoiner : public QObject
{
    Q_OBJECT

public:
    /** The members to call back now (none while the run does not take them back). */
    using Lost = std::function<std::vector<Member *>()>;
    using Answered = std::function<void(Member &, ControlClient *)>;

    Rejoiner(QByteArray clusterKey, Lost lost, Answered answered, QObject *parent);
    void start() { m_timer.start(); }
    void stop() { m_timer.stop(); }

private:
    void callBack();

    QByteArray m_key;
    Lost m_lost;
    Answered m_answered;
    QTimer m_timer;
};

} // namespace edgetrain::net
