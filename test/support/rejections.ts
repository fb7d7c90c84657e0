import { expect } from 'chai';
import { AppError } from '../../src/errors/app-error.js';

/** What a promise rejects with; fails the test when it resolves. */
export async function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

/** The AppError a promise rejects with; fails the test when it resolves or rejects with anything else. */
export async function appErrorOf(promise: Promise<unknown>): Promise<AppError> {
  const error = await rejectionOf(promise);
  expect(error).to.be.instanceOf(AppError);
  return error as AppError;
}
