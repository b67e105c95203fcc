#pragma once

#include <QString>

#include <optional>

namespace edgetrain::gui {

/**
 * What the demo session is made of, as demo.json describes it (resources/demo.json in the
 * source tree, /usr/share/edgetrain/demo.json where the packages install it): the video and how
 * it is labelled, the frame dataset, the plan, and the verified frames. The sections and fields
 * are session.json's (capture.every, plan.lr, ...), and the demo sets them through the workflow,
 * which checks their values by the session's rules; `why` holds free text on each choice.
 */
struct DemoMaterial
{
    QString file; // the demo.json it was read from

    QString video;          // capture.source
    QString videoPackage;   // source_package: the Debian package that ships the video
    QString teacher;        // capture.teacher
    QString tracker;        // capture.tracker
    int every = 0;          // capture.every: the teacher on every k-th frame
    int labelledFrames = 0; // capture.max_frames: the student never sees the frames after these
    QString datasetKind;    // dataset.kind
    int frameWidth = 0;     // dataset.frame_width
    int frameEvery = 0;     // dataset.frame_every
    QString model;          // plan.model
    int epochs = 0;         // plan.epochs
    int batch = 0;          // plan.batch
    double lr = 0;          // plan.lr
    /** truth: a MOT gt.txt with frames.txt next to it, as an absolute path; empty for none. */
    QString truthFile;

    /**
     * Reads `path`; a relative truth path is taken from `root`. Every field is required and an
     * unknown one is refused (a misspelt field would otherwise change the demo silently). On a
     * file that cannot be read, is not JSON or has a field missing, unknown or of the wrong type:
     * nothing, with "FILE: " and core::FieldCheck's sentence in `error`.
     */
    static std::optional<DemoMaterial> read(const QString &path, const QString &root,
                                            QString *error);

    /** The demo.json this program uses: the source tree's when it runs from its build folder,
     *  else the installed one. `root` gets the folder its relative paths start from. */
    static QString defaultFile(QString *root);
};

} // namespace edgetrain::gui
