#pragma once

#include <filesystem>

namespace edgetrain::vision {

/**
 * A dataset's folder in the session (frames/, dataset/), replaced whole by a new build so that a
 * process killed at any moment leaves a complete dataset to read. The new dataset is written to
 * its staging folder (frames.tmp); once complete, the old folder is renamed aside (frames.old),
 * the new one renamed in, and the old one deleted. Each rename is atomic, so a kill leaves one of:
 *  - the old folder, perhaps with a staging folder (complete or not): the old dataset;
 *  - the old folder aside and the complete staging folder, no folder: the old dataset, in .old;
 *  - the new folder, perhaps with the old one aside (partly deleted or not): the new dataset.
 * current() names the dataset of each; the next build removes the leftovers. Errors are
 * std::filesystem::filesystem_error.
 */
class DatasetFolder
{
public:
    /** `folder`: <session>/frames; `staging`: <session>/frames.tmp. */
    DatasetFolder(std::filesystem::path folder, std::filesystem::path staging);

    /** The folder holding the dataset: `folder`, or `folder`.old when a replace() was cut short
     *  between its two renames (the old dataset, which session.json describes). */
    std::filesystem::path current() const;
    /** The staging folder emptied (a build cut short leaves one) and created. */
    std::filesystem::path stage() const;
    /** The complete staging folder becomes `folder`; the dataset it replaces is deleted. A
     *  failure to delete it leaves it aside for the next build to remove. */
    void replace() const;

private:
    std::filesystem::path m_folder, m_staging, m_old;
};

} // namespace edgetrain::vision
