#include "formulations/contact/contact_model.h"

#include <cmath>
#include <stdexcept>

#include "formulations/contact/lagged_hunt_crossley.h"
#include "formulations/contact/sap_friction_cone.h"

namespace contactlab::contact {
namespace {

// Throws InputError naming `key` when a constant is outside its range, so that a model built
// without going through a validated ParameterSet still refuses nonsense (spec §5 A1).
void RequireRange(const std::string& key, double value, bool strictly_positive) {
  const bool valid = std::isfinite(value) && (strictly_positive ? value > 0.0 : value >= 0.0);
  if (!valid) {
    throw InputError("key '" + key + "' must be " + (strictly_positive ? "> 0" : ">= 0") + " (got " + ToString(value) +
                     ")");
  }
}

}  // namespace

const ChoiceTable<ContactModelKind>& ContactModelNames() {
  static const ChoiceTable<ContactModelKind> names = {{"sap_cone", ContactModelKind::kSapCone},
                                                      {"lagged", ContactModelKind::kLagged}};
  return names;
}

std::vector<ParameterSpec> ContactModelParameters::Specs() {
  const ContactModelParameters defaults;
  return {
      {"contact.model", ChoiceName(defaults.model, ContactModelNames()), "",
       "Per-contact convex model: sap_cone (SAP friction cone, §1.3.1) or lagged (Hunt-Crossley, §1.3.4).",
       OneOf(ChoiceNames(ContactModelNames()))},
      {"contact.stiffness", defaults.stiffness, "N/m",
       "Point-contact stiffness k; large so that SAP's near-rigid cap decides the compliance (spec A1).", Positive()},
      {"contact.dissipation_time_scale", defaults.dissipation_time_scale, "s",
       "SAP dissipation time scale tau_d (d = tau_d k); 0 removes the penetration in one step.", NonNegative()},
      {"contact.hunt_crossley_dissipation", defaults.hunt_crossley_dissipation, "s/m",
       "Hunt-Crossley dissipation d of the lagged model; 10 s/m as recommended in spec A1.", NonNegative()},
      {"contact.near_rigid_threshold", defaults.near_rigid_threshold, "1",
       "SAP near-rigid constant beta: stiffest contact oscillates with period beta*dt (Drake uses 1).", NonNegative()},
      {"contact.friction_regularization", defaults.friction_regularization, "1",
       "SAP friction regularization sigma, R_t = sigma w; stiction slip is about sigma*dt*g (Drake uses 1e-3).",
       Positive()},
      {"contact.stiction_tolerance", defaults.stiction_tolerance, "m/s",
       "Smallest soft-norm tolerance v_s of the lagged model's friction (Drake uses 1e-3 m/s).", Positive()},
  };
}

ContactModelParameters ContactModelParameters::FromParameters(const ParameterSet& parameters) {
  ContactModelParameters result;
  result.model = GetChoice(parameters, "contact.model", ContactModelNames());
  result.stiffness = parameters.GetDouble("contact.stiffness");
  result.dissipation_time_scale = parameters.GetDouble("contact.dissipation_time_scale");
  result.hunt_crossley_dissipation = parameters.GetDouble("contact.hunt_crossley_dissipation");
  result.near_rigid_threshold = parameters.GetDouble("contact.near_rigid_threshold");
  result.friction_regularization = parameters.GetDouble("contact.friction_regularization");
  result.stiction_tolerance = parameters.GetDouble("contact.stiction_tolerance");
  return result;
}

std::vector<ParameterSpec> ContactModelParameters::SapConeSpecs() {
  std::vector<ParameterSpec> specs;
  for (ParameterSpec& spec : Specs()) {
    if (spec.key == "contact.stiffness" || spec.key == "contact.dissipation_time_scale" ||
        spec.key == "contact.near_rigid_threshold" || spec.key == "contact.friction_regularization") {
      specs.push_back(std::move(spec));
    }
  }
  return specs;
}

ContactModelParameters ContactModelParameters::SapConeFromParameters(const ParameterSet& parameters) {
  ContactModelParameters result;
  result.model = ContactModelKind::kSapCone;
  result.stiffness = parameters.GetDouble("contact.stiffness");
  result.dissipation_time_scale = parameters.GetDouble("contact.dissipation_time_scale");
  result.near_rigid_threshold = parameters.GetDouble("contact.near_rigid_threshold");
  result.friction_regularization = parameters.GetDouble("contact.friction_regularization");
  return result;
}

LineTerms ContactModel::EvaluateAlong(const PreparedContact& contact, const Vector3& contact_velocity,
                                      const Vector3& direction) const {
  const ContactEvaluation evaluation = Evaluate(contact, contact_velocity, /*with_hessian=*/true);
  return {evaluation.cost, -direction.dot(evaluation.impulse), direction.dot(evaluation.hessian * direction)};
}

std::unique_ptr<ContactModel> MakeContactModel(const ContactModelParameters& parameters) {
  RequireRange("contact.stiffness", parameters.stiffness, true);
  RequireRange("contact.dissipation_time_scale", parameters.dissipation_time_scale, false);
  RequireRange("contact.hunt_crossley_dissipation", parameters.hunt_crossley_dissipation, false);
  RequireRange("contact.near_rigid_threshold", parameters.near_rigid_threshold, false);
  RequireRange("contact.friction_regularization", parameters.friction_regularization, true);
  RequireRange("contact.stiction_tolerance", parameters.stiction_tolerance, true);
  switch (parameters.model) {
    case ContactModelKind::kSapCone:
      return std::make_unique<SapFrictionCone>(parameters);
    case ContactModelKind::kLagged:
      return std::make_unique<LaggedHuntCrossley>(parameters);
  }
  throw std::logic_error("MakeContactModel: a contact model kind without a model");
}

}  // namespace contactlab::contact
