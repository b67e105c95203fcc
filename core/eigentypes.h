#pragma once

// Eigen in one place: the aliases and zero-copy views the kernels use. Everything is row-major,
// because tensors are stored NCHW / [N, features] row-major.

#include <Eigen/Core>

namespace edgetrain::core {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Vector = Eigen::Matrix<float, Eigen::Dynamic, 1>;
using MatrixMap = Eigen::Map<RowMatrix, Eigen::Unaligned, Eigen::OuterStride<>>;
using ConstMatrixMap = Eigen::Map<const RowMatrix, Eigen::Unaligned, Eigen::OuterStride<>>;
using ArrayMap = Eigen::Map<Eigen::ArrayXf>;
using ConstArrayMap = Eigen::Map<const Eigen::ArrayXf>;

} // namespace edgetrain::core
