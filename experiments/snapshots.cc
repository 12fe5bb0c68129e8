#include "experiments/snapshots.h"

#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>

#include <Eigen/Eigenvalues>

namespace contactlab::experiments {
namespace {

constexpr const char* kFieldsKey = "output.snapshot_fields";
constexpr const char* kKnownFields = "velocity, deformation_gradient, plastic_strain";

// The names in a comma-separated list, blanks trimmed, empty items dropped.
std::vector<std::string> SplitNames(const std::string& text) {
  std::vector<std::string> names;
  std::stringstream stream(text);
  std::string item;
  while (std::getline(stream, item, ',')) {
    const auto first = item.find_first_not_of(" \t");
    if (first == std::string::npos) continue;
    const auto last = item.find_last_not_of(" \t");
    names.push_back(item.substr(first, last - first + 1));
  }
  return names;
}

// Sets the flag `name` names; false for an unknown name.
bool SetField(const std::string& name, SnapshotFields& fields) {
  if (name == "velocity")
    fields.velocity = true;
  else if (name == "deformation_gradient")
    fields.deformation_gradient = true;
  else if (name == "plastic_strain")
    fields.plastic_strain = true;
  else
    return false;
  return true;
}

void AppendVector(std::vector<double>& out, const Eigen::Vector3d& v) {
  out.insert(out.end(), {v.x(), v.y(), v.z()});
}

std::vector<double> QuaternionWxyz(const Eigen::Quaterniond& q) {
  return {q.w(), q.x(), q.y(), q.z()};
}

const char* MotionName(rigid::BodyMotion motion) {
  switch (motion) {
    case rigid::BodyMotion::kStatic:
      return "static";
    case rigid::BodyMotion::kKinematic:
      return "kinematic";
    case rigid::BodyMotion::kFree:
      return "free";
    case rigid::BodyMotion::kArticulated:
      return "articulated";
  }
  return "unknown";
}

// Text safe inside an XML element or a double-quoted attribute.
std::string XmlEscape(const std::string& text) {
  std::string escaped;
  for (const char c : text) {
    switch (c) {
      case '&':
        escaped += "&amp;";
        break;
      case '<':
        escaped += "&lt;";
        break;
      case '>':
        escaped += "&gt;";
        break;
      case '"':
        escaped += "&quot;";
        break;
      default:
        escaped += c;
    }
  }
  return escaped;
}

// One HDF5 DataItem of 8-byte data (float64, or int64 for number_type "Int").
void WriteDataItem(std::ostream& out, const std::string& indent, const std::string& dimensions,
                   const std::string& h5_file_name, const std::string& dataset, const char* number_type = "Float") {
  out << indent << "<DataItem Dimensions=\"" << dimensions << "\" NumberType=\"" << number_type
      << "\" Precision=\"8\" Format=\"HDF\">" << XmlEscape(h5_file_name) << ":" << dataset << "</DataItem>\n";
}

void WriteAttribute(std::ostream& out, const std::string& indent, const std::string& name, const std::string& type,
                    const std::string& dimensions, const std::string& h5_file_name, const std::string& dataset) {
  out << indent << "<Attribute Name=\"" << name << "\" AttributeType=\"" << type << "\" Center=\"Node\">\n";
  WriteDataItem(out, indent + "  ", dimensions, h5_file_name, dataset);
  out << indent << "</Attribute>\n";
}

// A Polyvertex grid of `count` points at `positions`, one vertex cell per point.
void OpenPointGrid(std::ostream& out, const std::string& indent, const std::string& name, std::size_t count,
                   const std::string& h5_file_name, const std::string& positions) {
  out << indent << "<Grid Name=\"" << name << "\" GridType=\"Uniform\">\n"
      << indent << "  <Topology TopologyType=\"Polyvertex\" NumberOfElements=\"" << count
      << "\" NodesPerElement=\"1\">\n";
  WriteDataItem(out, indent + "    ", std::to_string(count), h5_file_name, PolyvertexDataset(count), "Int");
  out << indent << "  </Topology>\n" << indent << "  <Geometry GeometryType=\"XYZ\">\n";
  WriteDataItem(out, indent + "    ", std::to_string(count) + " 3", h5_file_name, positions);
  out << indent << "  </Geometry>\n";
}

}  // namespace

ParameterCheck SnapshotFieldsCheck() {
  return [](const ParameterValue& value) -> std::string {
    const auto* text = std::get_if<std::string>(&value);
    if (text == nullptr) return "must be a string";
    SnapshotFields ignored;
    for (const std::string& name : SplitNames(*text)) {
      if (!SetField(name, ignored)) {
        return "names unknown field '" + name + "' (known: " + kKnownFields + ")";
      }
    }
    return "";
  };
}

SnapshotFields ParseSnapshotFields(const std::string& text) {
  SnapshotFields fields;
  for (const std::string& name : SplitNames(text)) {
    if (!SetField(name, fields)) {
      throw InputError(std::string("key '") + kFieldsKey + "' names unknown field '" + name +
                       "' (known: " + kKnownFields + ")");
    }
  }
  return fields;
}

double PlasticHenckyStrainNorm(const mpm::Matrix3& plastic_deformation_gradient) {
  // σ_i² are the eigenvalues of F^P F^Pᵀ, so ln σ_i = ½ ln λ_i.
  const Eigen::SelfAdjointEigenSolver<mpm::Matrix3> solver(
      plastic_deformation_gradient * plastic_deformation_gradient.transpose(), Eigen::EigenvaluesOnly);
  double sum = 0.0;
  for (int i = 0; i < 3; ++i) {
    const double log_stretch = 0.5 * std::log(solver.eigenvalues()[i]);
    sum += log_stretch * log_stretch;
  }
  return std::sqrt(sum);
}

Snapshot CaptureSnapshot(std::int64_t step, double time, const World& world, const SnapshotFields& fields) {
  const mpm::Particles& particles = world.particles;
  Snapshot snapshot;
  snapshot.step = step;
  snapshot.time = time;
  snapshot.particles = particles.size();
  snapshot.bodies = world.bodies.size();
  snapshot.position.reserve(3 * particles.size());
  for (const mpm::Vector3& x : particles.position) AppendVector(snapshot.position, x);
  if (fields.velocity) {
    snapshot.velocity.reserve(3 * particles.size());
    for (const mpm::Vector3& v : particles.velocity) AppendVector(snapshot.velocity, v);
  }
  if (fields.deformation_gradient) {
    snapshot.deformation_gradient.reserve(9 * particles.size());
    for (const mpm::Matrix3& f : particles.deformation_gradient) {
      for (int row = 0; row < 3; ++row) {
        for (int column = 0; column < 3; ++column) snapshot.deformation_gradient.push_back(f(row, column));
      }
    }
  }
  if (fields.plastic_strain) {
    snapshot.plastic_strain.reserve(particles.size());
    for (const mpm::Matrix3& f : particles.plastic_deformation_gradient) {
      snapshot.plastic_strain.push_back(PlasticHenckyStrainNorm(f));
    }
  }
  for (const rigid::RigidBody& body : world.bodies) {
    AppendVector(snapshot.body_position, body.pose.position);
    const std::vector<double> q = QuaternionWxyz(body.pose.orientation);
    snapshot.body_orientation.insert(snapshot.body_orientation.end(), q.begin(), q.end());
  }
  return snapshot;
}

std::vector<BodyDescription> DescribeBodies(const World& world) {
  std::vector<BodyDescription> bodies;
  for (const rigid::RigidBody& body : world.bodies) {
    BodyDescription description{body.name, MotionName(body.motion), {}};
    for (const rigid::Geometry& geometry : body.geometries) {
      GeometryDescription shape;
      const rigid::Shape& s = geometry.shape;
      switch (s.kind) {
        case rigid::ShapeKind::kHalfSpace:
          shape.shape = "half_space";
          break;
        case rigid::ShapeKind::kBox:
          shape.shape = "box";
          shape.half_extents = {s.half_extents.x(), s.half_extents.y(), s.half_extents.z()};
          break;
        case rigid::ShapeKind::kSphere:
          shape.shape = "sphere";
          shape.radius = s.radius;
          break;
        case rigid::ShapeKind::kCylinder:
          shape.shape = "cylinder";
          shape.radius = s.radius;
          shape.half_height = s.half_height;
          break;
      }
      const rigid::Vector3& p = geometry.pose_in_body.position;
      shape.position = {p.x(), p.y(), p.z()};
      shape.orientation = QuaternionWxyz(geometry.pose_in_body.orientation);
      description.geometries.push_back(std::move(shape));
    }
    bodies.push_back(std::move(description));
  }
  return bodies;
}

std::string PolyvertexDataset(std::size_t count) {
  return "/xdmf/polyvertex_" + std::to_string(count);
}

std::vector<std::size_t> PolyvertexCounts(const std::vector<Snapshot>& snapshots) {
  std::set<std::size_t> counts;
  for (const Snapshot& snapshot : snapshots) {
    if (snapshot.particles > 0) counts.insert(snapshot.particles);
    if (snapshot.bodies > 0) counts.insert(snapshot.bodies);
  }
  return {counts.begin(), counts.end()};
}

std::string XdmfText(const std::vector<Snapshot>& snapshots, const std::string& h5_file_name) {
  std::ostringstream out;
  out << "<?xml version=\"1.0\" ?>\n"
         "<!DOCTYPE Xdmf SYSTEM \"Xdmf.dtd\" []>\n"
         "<Xdmf Version=\"3.0\" xmlns:xi=\"http://www.w3.org/2001/XInclude\">\n"
         "  <Domain>\n"
         "    <Grid Name=\"snapshots\" GridType=\"Collection\" CollectionType=\"Temporal\">\n";
  for (std::size_t k = 0; k < snapshots.size(); ++k) {
    const Snapshot& snapshot = snapshots[k];
    const std::string group = "/snapshots/" + std::to_string(k) + "/";
    const std::string n = std::to_string(snapshot.particles);
    const std::string b = std::to_string(snapshot.bodies);
    char time[32];
    std::snprintf(time, sizeof(time), "%.17g", snapshot.time);
    out << "      <Grid Name=\"snapshot_" << k << "\" GridType=\"Collection\" CollectionType=\"Spatial\">\n"
        << "        <Time Value=\"" << time << "\"/>\n";
    const std::string indent = "        ";
    if (snapshot.particles > 0) {
      OpenPointGrid(out, indent, "particles", snapshot.particles, h5_file_name, group + "position");
      const std::string inner = indent + "  ";
      if (!snapshot.velocity.empty()) {
        WriteAttribute(out, inner, "velocity", "Vector", n + " 3", h5_file_name, group + "velocity");
      }
      if (!snapshot.deformation_gradient.empty()) {
        WriteAttribute(out, inner, "deformation_gradient", "Tensor", n + " 9", h5_file_name,
                       group + "deformation_gradient");
      }
      if (!snapshot.plastic_strain.empty()) {
        WriteAttribute(out, inner, "plastic_strain", "Scalar", n, h5_file_name, group + "plastic_strain");
      }
      out << indent << "</Grid>\n";
    }
    if (snapshot.bodies > 0) {
      OpenPointGrid(out, indent, "bodies", snapshot.bodies, h5_file_name, group + "body_position");
      WriteAttribute(out, indent + "  ", "orientation_wxyz", "Matrix", b + " 4", h5_file_name,
                     group + "body_orientation");
      out << indent << "</Grid>\n";
    }
    out << "      </Grid>\n";
  }
  out << "    </Grid>\n"
         "  </Domain>\n"
         "</Xdmf>\n";
  return out.str();
}

}  // namespace contactlab::experiments
