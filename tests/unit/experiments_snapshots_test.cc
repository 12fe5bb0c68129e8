// Snapshots: parsing output.snapshot_fields, the plastic strain measure, capturing a tiny
// world, and the recorder's /snapshots, /bodies and XDMF sidecar (written only with
// snapshots, atomically, with dimensions that match the datasets).
#include "experiments/snapshots.h"

#include <gtest/gtest.h>
#include <hdf5.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "experiments/run_recorder.h"

namespace contactlab::experiments {
namespace {

namespace fs = std::filesystem;

// Two particles (one stretched plastically) and a static box body rotated about z.
World TinyWorld() {
  World world;
  world.particles.Add(mpm::Vector3(0.1, 0.2, 0.3), mpm::Vector3(1.0, 2.0, 3.0), 1.0, 1.0, 0);
  world.particles.Add(mpm::Vector3(0.4, 0.5, 0.6), mpm::Vector3::Zero(), 1.0, 1.0, 0);
  world.particles.deformation_gradient[0] << 1, 2, 3, 4, 5, 6, 7, 8, 9;
  world.particles.plastic_deformation_gradient[1] = mpm::Vector3(2.0, 0.5, 1.0).asDiagonal();
  rigid::Pose pose;
  pose.position = rigid::Vector3(0.0, 0.0, -1.0);
  pose.orientation = rigid::Quaternion(Eigen::AngleAxisd(0.5, rigid::Vector3::UnitZ()));
  rigid::Geometry box{rigid::Shape::Box(rigid::Vector3(1.0, 2.0, 3.0)), rigid::Pose{}, 0.5};
  world.bodies.push_back(rigid::MakeStaticBody("table", {box}, pose));
  return world;
}

std::string ReadText(const fs::path& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

std::vector<hsize_t> Shape(hid_t file, const std::string& path) {
  const hid_t dataset = H5Dopen2(file, path.c_str(), H5P_DEFAULT);
  if (dataset < 0) return {};
  const hid_t space = H5Dget_space(dataset);
  std::vector<hsize_t> shape(static_cast<std::size_t>(H5Sget_simple_extent_ndims(space)));
  H5Sget_simple_extent_dims(space, shape.data(), nullptr);
  H5Sclose(space);
  H5Dclose(dataset);
  return shape;
}

double ReadDouble(hid_t object, const char* name) {
  double value = NAN;
  const hid_t attribute = H5Aopen(object, name, H5P_DEFAULT);
  H5Aread(attribute, H5T_NATIVE_DOUBLE, &value);
  H5Aclose(attribute);
  return value;
}

class SnapshotRecorderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    directory_ = fs::temp_directory_path() / ("contactlab_snapshots_" + std::to_string(::getpid()) + "_" +
                                              ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(directory_);
    fs::create_directories(directory_);
  }
  void TearDown() override { fs::remove_all(directory_); }
  fs::path directory_;
};

TEST(SnapshotFields, ParsesKnownNamesAndRejectsOthersNamingKeyAndName) {
  const SnapshotFields fields = ParseSnapshotFields(" velocity,plastic_strain ,");
  EXPECT_TRUE(fields.velocity);
  EXPECT_FALSE(fields.deformation_gradient);
  EXPECT_TRUE(fields.plastic_strain);
  const SnapshotFields none = ParseSnapshotFields("");
  EXPECT_FALSE(none.velocity || none.deformation_gradient || none.plastic_strain);
  EXPECT_EQ(SnapshotFieldsCheck()(std::string("deformation_gradient")), "");
  EXPECT_NE(SnapshotFieldsCheck()(std::string("velocity,bogus")).find("'bogus'"), std::string::npos);
  try {
    ParseSnapshotFields("velocity,stress");
    FAIL() << "no error for an unknown field";
  } catch (const InputError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("output.snapshot_fields"), std::string::npos) << message;
    EXPECT_NE(message.find("'stress'"), std::string::npos) << message;
  }
}

TEST(Snapshots, PlasticStrainIsTheNormOfTheLogStretches) {
  EXPECT_NEAR(PlasticHenckyStrainNorm(mpm::Matrix3::Identity()), 0.0, 1e-15);
  // Rotations do not change it: F^P = R diag(2, 1/2, 1).
  const mpm::Matrix3 rotation = Eigen::AngleAxisd(0.7, mpm::Vector3(1, 2, 3).normalized()).toRotationMatrix();
  const mpm::Matrix3 stretch = mpm::Vector3(2.0, 0.5, 1.0).asDiagonal();
  EXPECT_NEAR(PlasticHenckyStrainNorm(rotation * stretch), std::sqrt(2.0) * std::log(2.0), 1e-12);
}

TEST(Snapshots, CaptureIsRowMajorWithWxyzQuaternions) {
  const World world = TinyWorld();
  const Snapshot snapshot = CaptureSnapshot(7, 0.25, world, {true, true, true});
  EXPECT_EQ(snapshot.step, 7);
  ASSERT_EQ(snapshot.particles, 2u);
  ASSERT_EQ(snapshot.bodies, 1u);
  EXPECT_EQ(snapshot.position, (std::vector<double>{0.1, 0.2, 0.3, 0.4, 0.5, 0.6}));
  EXPECT_EQ(snapshot.velocity, (std::vector<double>{1, 2, 3, 0, 0, 0}));
  ASSERT_EQ(snapshot.deformation_gradient.size(), 18u);
  for (int i = 0; i < 9; ++i) EXPECT_EQ(snapshot.deformation_gradient[i], i + 1.0);  // row-major
  EXPECT_EQ(snapshot.deformation_gradient[9], 1.0);
  ASSERT_EQ(snapshot.plastic_strain.size(), 2u);
  EXPECT_NEAR(snapshot.plastic_strain[1], std::sqrt(2.0) * std::log(2.0), 1e-12);
  EXPECT_EQ(snapshot.body_position, (std::vector<double>{0.0, 0.0, -1.0}));
  ASSERT_EQ(snapshot.body_orientation.size(), 4u);
  EXPECT_NEAR(snapshot.body_orientation[0], std::cos(0.25), 1e-15);  // w first
  EXPECT_NEAR(snapshot.body_orientation[3], std::sin(0.25), 1e-15);  // then x, y, z
  // Fields not asked for stay empty.
  const Snapshot bare = CaptureSnapshot(0, 0.0, world, {});
  EXPECT_TRUE(bare.velocity.empty() && bare.deformation_gradient.empty() && bare.plastic_strain.empty());
}

TEST(Snapshots, XdmfReferencesEveryDatasetWithItsDimensions) {
  const World world = TinyWorld();
  const std::string text =
      XdmfText({CaptureSnapshot(0, 0.0, world, {true, true, true}), CaptureSnapshot(5, 0.5, world, {})}, "run.h5");
  for (const char* expected :
       {"CollectionType=\"Temporal\"", "<Time Value=\"0.5\"/>", "NumberOfElements=\"2\"", "Dimensions=\"2 3\"",
        "Dimensions=\"2\" NumberType=\"Int\" Precision=\"8\" Format=\"HDF\">"
        "run.h5:/xdmf/polyvertex_2<",
        ">run.h5:/snapshots/0/position<", ">run.h5:/snapshots/0/velocity<",
        "Dimensions=\"2 9\" NumberType=\"Float\" Precision=\"8\" Format=\"HDF\">"
        "run.h5:/snapshots/0/deformation_gradient<",
        ">run.h5:/snapshots/0/plastic_strain<", ">run.h5:/snapshots/1/body_position<",
        "Dimensions=\"1 4\" NumberType=\"Float\" Precision=\"8\" Format=\"HDF\">"
        "run.h5:/snapshots/1/body_orientation<"}) {
    EXPECT_NE(text.find(expected), std::string::npos) << expected << "\n" << text;
  }
  EXPECT_EQ(text.find("/snapshots/1/velocity"), std::string::npos);
}

TEST_F(SnapshotRecorderTest, FinishWritesSnapshotsBodiesAndTheSidecar) {
  const fs::path output = directory_ / "run.h5";
  const World world = TinyWorld();
  {
    RunRecorder recorder(output);
    recorder.SetBodies(DescribeBodies(world));
    recorder.AppendSnapshot(CaptureSnapshot(0, 0.0, world, {true, false, true}));
    recorder.AppendSnapshot(CaptureSnapshot(3, 0.3, world, {true, false, true}));
    EXPECT_THROW(recorder.AppendSnapshot(CaptureSnapshot(4, 0.3, world, {})), std::logic_error);
    recorder.Finish("ok", "", 3, 0.1);
  }
  ASSERT_TRUE(fs::exists(output));
  ASSERT_TRUE(fs::exists(directory_ / "run.xdmf"));
  EXPECT_FALSE(fs::exists(directory_ / "run.xdmf.partial"));
  EXPECT_NE(ReadText(directory_ / "run.xdmf").find(">run.h5:/snapshots/1/plastic_strain<"), std::string::npos);

  const hid_t file = H5Fopen(output.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  EXPECT_EQ(Shape(file, "/snapshots/0/position"), (std::vector<hsize_t>{2, 3}));
  EXPECT_EQ(Shape(file, "/snapshots/1/velocity"), (std::vector<hsize_t>{2, 3}));
  EXPECT_EQ(Shape(file, "/snapshots/1/plastic_strain"), (std::vector<hsize_t>{2}));
  EXPECT_EQ(Shape(file, "/snapshots/1/body_orientation"), (std::vector<hsize_t>{1, 4}));
  // The XDMF connectivity for the particle count 2 and the body count 1.
  EXPECT_EQ(Shape(file, "/xdmf/polyvertex_2"), (std::vector<hsize_t>{2}));
  EXPECT_EQ(Shape(file, "/xdmf/polyvertex_1"), (std::vector<hsize_t>{1}));
  EXPECT_LE(H5Lexists(file, "/snapshots/1/deformation_gradient", H5P_DEFAULT), 0);
  const hid_t snapshot = H5Gopen2(file, "/snapshots/1", H5P_DEFAULT);
  EXPECT_DOUBLE_EQ(ReadDouble(snapshot, "time"), 0.3);
  H5Gclose(snapshot);
  const hid_t geometry = H5Gopen2(file, "/bodies/0/0", H5P_DEFAULT);
  ASSERT_GE(geometry, 0);
  EXPECT_GT(H5Aexists(geometry, "half_extents"), 0);
  EXPECT_EQ(H5Aexists(geometry, "radius"), 0);
  H5Gclose(geometry);
  H5Fclose(file);

  // A later run to the same path without snapshots removes the stale sidecar.
  {
    RunRecorder recorder(output);
    recorder.Finish("ok", "", 0, 0.0);
  }
  EXPECT_TRUE(fs::exists(output));
  EXPECT_FALSE(fs::exists(directory_ / "run.xdmf"));
}

TEST_F(SnapshotRecorderTest, UnfinishedRunLeavesNoSidecar) {
  const fs::path output = directory_ / "run.h5";
  {
    RunRecorder recorder(output);
    recorder.AppendSnapshot(CaptureSnapshot(0, 0.0, TinyWorld(), {}));
  }
  EXPECT_TRUE(fs::is_empty(directory_));
}

}  // namespace
}  // namespace contactlab::experiments
