-- AlterEnum
ALTER TYPE "UserRole" ADD VALUE 'release';

