// Sample message catalog written for treeagent (original content, MIT).
export default {
  "greeting.morning": { text: "Good morning", context: "home banner", maxLength: 24 },
  "greeting.evening": { text: "Good evening", context: "home banner", maxLength: 24 },
  "error.offline": { text: "You appear to be offline", context: "toast", maxLength: 48 },
  "error.quota": { text: "Storage quota exceeded", context: "dialog", maxLength: 40 },
};

// Looks like a credential: rejected as a sensitive string.
export const serviceAccount = { user: "reporter", password: "correct-horse-battery" };
