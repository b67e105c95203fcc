#include "datasetfolder.h"

namespace edgetrain::vision {

namespace fs = std::filesystem;

DatasetFolder::DatasetFolder(fs::path folder, fs::path staging)
    : m_folder(std::move(folder)), m_staging(std::move(staging)), m_old(m_folder.string() + ".old")
{}

fs::path DatasetFolder::current() const
{
    return !fs::exists(m_folder) && fs::exists(m_old) ? m_old : m_folder;
}

fs::path DatasetFolder::stage() const
{
    fs::remove_all(m_staging);
    fs::create_directories(m_staging);
    return m_staging;
}

void DatasetFolder::replace() const
{
    // Without `folder`, an earlier replace was cut short and `folder`.old is the dataset: it stays
    // until the new one is in. With it, `folder`.old is that replace's leftover.
    if (fs::exists(m_folder)) {
        fs::remove_all(m_old);
        fs::rename(m_folder, m_old);
    }
    fs::rename(m_staging, m_folder);
    std::error_code ignored; // the new dataset is in: a leftover is no failure of the build
    fs::remove_all(m_old, ignored);
}

} // namespace edgetrain::vision
