export {
  calibrate,
  findKnownBadMutants,
  resolveCalibrationOptions,
  type CalibrationOptions,
  type CalibrationReport,
  type TaskCalibration,
  type VariantVerdict,
} from './calibrate.js';
